package host_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestChatSaidJustBeforeQuitIsRelayed: what a player says just before it
// quits reaches the others: the client
// waits for the server to confirm the line before it leaves, and the host
// relays what a player sent before it applies that player's departure.
// Several players in a row make the race visible.
func TestChatSaidJustBeforeQuitIsRelayed(t *testing.T) {
	srv, _ := startHost(t, nil)
	bob := dialHost(t, srv, "bob")
	const talkers = 5
	for i := range talkers {
		alice := dialHost(t, srv, fmt.Sprintf("alice%d", i))
		line := gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: fmt.Sprintf("hi from %d", i)})
		if err := alice.Send(gamemsg.TypeChatMessage, wire.Reliable, line); err != nil {
			t.Fatal(err)
		}
		if err := alice.Close(); err != nil {
			t.Fatalf("alice%d Close: %v", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	heard := map[string]bool{}
	for len(heard) < talkers {
		m, err := bob.Receive(ctx)
		if err != nil {
			t.Fatalf("bob heard only %v: %v", heard, err)
		}
		if m.Header.Type != gamemsg.TypeChatMessage {
			continue
		}
		cm, err := gamemsg.ParseChatMessage(m.Payload)
		if err != nil {
			t.Fatal(err)
		}
		heard[cm.Sender+": "+cm.Text] = true
	}
	for i := range talkers {
		if want := fmt.Sprintf("alice%d: hi from %d", i, i); !heard[want] {
			t.Errorf("bob never heard %q (heard %v)", want, heard)
		}
	}
}

// TestModuleLastMessagesBeforeKick: a module that sends a client its last
// messages and kicks it in the same handler (the same tick, before the
// tick's flush) gets them delivered, then the Disconnect with its reason.
func TestModuleLastMessagesBeforeKick(t *testing.T) {
	srv, _ := startHost(t, withModules("testdata/farewell.lua"))
	leave := wire.Schema{ID: 1300, Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 1, MaxLen: 1}
	bye := wire.Schema{ID: 1301, Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 1, MaxLen: 1}
	c := dialReg(t, srv, luaRegistry(t, leave, bye))
	const count = 20
	if err := c.Send(1300, wire.Reliable, []byte{count}); err != nil {
		t.Fatal(err)
	}
	got := map[byte]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			break
		}
		if m.Header.Type == 1301 {
			got[m.Payload[0]] = true
		}
	}
	if len(got) != count {
		t.Errorf("the client got %d of the module's %d last messages before its connection ended", len(got), count)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("the client was not disconnected")
	}
	if reason, detail := c.CloseReason(); reason != wire.DisconnectKicked || detail != "farewell said" {
		t.Errorf("close reason %v (%s), want Kicked (farewell said)", reason, detail)
	}
}

// TestShutdownTellsRoomPlayersTheirRoomClosed: when the server stops, a
// player in a room is told its room closed for the shutdown (RoomEvent
// Closed, value 2: docs/protocol.md §13.5) and gets that message before
// the Disconnect(ServerShutdown).
func TestShutdownTellsRoomPlayersTheirRoomClosed(t *testing.T) {
	cfg := config.Default()
	port, dataDir := 0, shortDataDir(t)
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir, Rooms: true, Modes: []string{"entities"}}, func(string) string { return "" })
	srv, err := host.New(host.Options{Config: cfg, Logger: testLogger(), ScriptsDir: "testdata"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()

	alice := newRoomClient(t, srv, "alice")
	room := alice.ok(gamemsg.TypeRoomCreate, create("last orders", "entities", 4))
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop within 10 s")
	}
	if ev := alice.event(gamemsg.RoomClosed, 0); ev.Room != room || ev.Value != uint32(gamemsg.CloseShutdown) {
		t.Errorf("RoomEvent %+v, want Closed for shutdown of room %d", ev, room)
	}
	select {
	case <-alice.c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("alice still connected after the shutdown")
	}
	if reason, detail := alice.c.CloseReason(); reason != wire.DisconnectServerShutdown {
		t.Errorf("alice closed with %v (%s), want ServerShutdown", reason, detail)
	}
}
