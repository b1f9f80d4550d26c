package netstack_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
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

func dial(t *testing.T, srv *netstack.Server, name string) *netstack.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin()})
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

func TestUDPClientsChatAndAdmission(t *testing.T) {
	var mu sync.Mutex
	var admitted []string
	srv := newTestServer(t, func(c *netstack.ServerConfig) {
		c.OnAdmitted = func(ci netstack.ClientInfo) {
			mu.Lock()
			admitted = append(admitted, ci.Name)
			mu.Unlock()
		}
	})
	names := []string{"alice", "bob", "carol"}
	clients := make([]*netstack.Client, len(names))
	for i, n := range names {
		clients[i] = dial(t, srv, n)
		gs := clients[i].GameState()
		if gs.ClientID != clients[i].ID() {
			t.Errorf("%s: GameStateSync client_id %d, assigned %d", n, gs.ClientID, clients[i].ID())
		}
	}
	if got := len(srv.Clients()); got != 3 {
		t.Fatalf("Clients() = %d, want 3", got)
	}
	chat := wire.AppendChatMessage(nil, &wire.ChatMessage{Text: "hello from alice"})
	if err := clients[0].Send(wire.TypeChatMessage, wire.Reliable, chat); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients[1:] {
		m := next(t, c, wire.TypeChatMessage)
		msg, err := wire.ParseChatMessage(m.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Sender != "alice" || msg.Text != "hello from alice" {
			t.Errorf("relayed chat = %+v", msg)
		}
	}
	_ = netip.AddrPort{}
}

// TestBroadcastAllocatesNothing: an unreliable broadcast (state updates a
// module may send every tick) allocates nothing per call.
func TestBroadcastAllocatesNothing(t *testing.T) {
	srv := newTestServer(t, nil)
	dial(t, srv, "alice")
	dial(t, srv, "bob")
	update := make([]byte, 12)
	srv.Broadcast(wire.TypeEntityStateUpdate, wire.Unreliable, update) // warm the pools
	if n := testing.AllocsPerRun(50, func() { srv.Broadcast(wire.TypeEntityStateUpdate, wire.Unreliable, update) }); n != 0 {
		t.Errorf("Broadcast allocates %v times per call", n)
	}
}
