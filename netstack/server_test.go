package netstack_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/internal/udprelay"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// newTestServer starts a server on 127.0.0.1 with an ephemeral port.
func newTestServer(t *testing.T, mod func(*netstack.ServerConfig)) *netstack.Server {
	t.Helper()
	return newTestServerTB(t, mod)
}

func newTestServerTB(t testing.TB, mod func(*netstack.ServerConfig)) *netstack.Server {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cfg := netstack.ServerConfig{Bind: "127.0.0.1", Identity: priv, Logger: slog.New(slog.DiscardHandler)}
	withGame(&cfg)
	if mod != nil {
		mod(&cfg)
	}
	srv, err := netstack.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Close() })
	return srv
}

// withGame gives a test server the game messages of sim/gamemsg as sample
// traffic: the transport knows none of them, so the tests bring the
// registry and the welcome message (a minimal GameStateSync) a host would.
func withGame(cfg *netstack.ServerConfig) {
	if cfg.Registry == nil {
		cfg.Registry = gamemsg.NewRegistry()
	}
	if cfg.Welcome == nil {
		cfg.Welcome = func(client uint32, dst []byte) (wire.MessageType, wire.Channel, []byte) {
			return gamemsg.TypeGameStateSync, wire.ReliableOrdered, gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{
				ClientID: client, TickRate: 60, ReplicationRate: 20, ServerName: "test", Mode: gamemsg.ModeCustom})
		}
	}
}

// gameClient is the client side of withGame.
func gameClient(cfg netstack.ClientConfig) netstack.ClientConfig {
	if cfg.Registry == nil {
		cfg.Registry = gamemsg.NewRegistry()
	}
	if cfg.Welcome == 0 {
		cfg.Welcome = gamemsg.TypeGameStateSync
	}
	return cfg
}

// welcome parses a client's GameStateSync (see withGame).
func welcome(t *testing.T, c *netstack.Client) gamemsg.GameStateSync {
	t.Helper()
	gs, err := gamemsg.ParseGameStateSync(c.Welcome().Payload)
	if err != nil {
		t.Fatalf("welcome GameStateSync: %v", err)
	}
	return gs
}

func dial(t *testing.T, srv *netstack.Server, name string) *netstack.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin()}))
	if err != nil {
		t.Fatalf("dial %s: %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// next returns the next message of type typ, skipping others.
func next(t *testing.T, c *netstack.Client, typ wire.MessageType) netstack.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for %v: %v", typ, err)
		}
		if m.Header.Type == typ {
			return m
		}
	}
}

// TestUDPClientsWelcomeAndAdmission: each client is admitted with the
// host's welcome message first, and a message from one client reaches the
// server's handler with the sender's id; the transport itself relays
// nothing (chat is the host's).
func TestUDPClientsWelcomeAndAdmission(t *testing.T) {
	got := make(chan uint32, 8)
	srv := newTestServer(t, nil)
	srv.Handle(gamemsg.TypeChatMessage, func(client uint32, _ *wire.Header, _ []byte) { got <- client })
	names := []string{"alice", "bob", "carol"}
	clients := make([]*netstack.Client, len(names))
	for i, n := range names {
		clients[i] = dial(t, srv, n)
		if gs := welcome(t, clients[i]); gs.ClientID != clients[i].ID() {
			t.Errorf("%s: GameStateSync client_id %d, assigned %d", n, gs.ClientID, clients[i].ID())
		}
	}
	if got := len(srv.Clients()); got != 3 {
		t.Fatalf("Clients() = %d, want 3", got)
	}
	chat := gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "hello from alice"})
	if err := clients[0].Send(gamemsg.TypeChatMessage, wire.Reliable, chat); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-got:
		if id != clients[0].ID() {
			t.Errorf("handler saw client %d, want %d", id, clients[0].ID())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler never saw the message")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	for {
		m, err := clients[1].Receive(ctx)
		if err != nil {
			break // nothing relayed
		}
		if m.Header.Type == gamemsg.TypeChatMessage {
			t.Fatal("the transport relayed a chat message")
		}
	}
}

// TestDialWithoutWelcome: a server without a welcome message admits a
// client that asks for none; Dial returns once ClientFinished is acked.
func TestDialWithoutWelcome(t *testing.T) {
	srv := newTestServer(t, func(c *netstack.ServerConfig) { c.Welcome = nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "plain", Pin: srv.Pin()})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if c.Welcome().Payload != nil || len(srv.Clients()) != 1 {
		t.Fatalf("welcome %v, %d clients; want none and 1", c.Welcome(), len(srv.Clients()))
	}
}

// TestBroadcastAllocatesNothing: an unreliable broadcast (state updates a
// module may send every tick) allocates nothing per call.
func TestBroadcastAllocatesNothing(t *testing.T) {
	if netstack.RaceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	srv := newTestServer(t, func(c *netstack.ServerConfig) { c.CloseLinger = time.Millisecond }) // its clients cannot answer at the end
	// The clients live in this process and copy what they receive: they
	// connect through a relay that goes dark once they are in, so that
	// what is counted is the server's work alone.
	link, err := udprelay.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	for _, name := range []string{"alice", "bob"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: link.Addr(), Name: name, Pin: srv.Pin(), CloseLinger: time.Millisecond}))
		cancel()
		if err != nil {
			t.Fatalf("dial %s: %v", name, err)
		}
		t.Cleanup(func() { c.Close() })
	}
	link.SetDark(true)
	update := make([]byte, 12)
	srv.Broadcast(gamemsg.TypeEntityStateUpdate, wire.Unreliable, update) // warm the pools
	send := func() {
		srv.Broadcast(gamemsg.TypeEntityStateUpdate, wire.Unreliable, update)
		srv.Flush() // as the host does every tick: the queues do not grow
	}
	send()
	if n := testing.AllocsPerRun(50, send); n != 0 {
		t.Errorf("Broadcast allocates %v times per call", n)
	}
}
