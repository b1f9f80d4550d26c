package netstack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

func waitDone(t *testing.T, c *netstack.Client) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(waitLong):
		t.Fatal("client connection did not end")
	}
}

func TestUDPKick(t *testing.T) {
	ev := newEvents()
	srv := quietServer(t, ev.hook)
	c := dial(t, srv, "kicked")
	other := dial(t, srv, "stays")
	id := c.ID()
	if err := srv.Kick(id, wire.DisconnectKicked, "bye"); err != nil {
		t.Fatal(err)
	}
	waitDone(t, c)
	if r, d := c.CloseReason(); r != wire.DisconnectKicked || d != "bye" {
		t.Fatalf("client CloseReason = %v %q, want Kicked \"bye\"", r, d)
	}
	if e := ev.waitDisconnect(t, id); e.reason != wire.DisconnectKicked || e.detail != "bye" || e.info.Name != "kicked" {
		t.Fatalf("OnDisconnected %+v, want Kicked \"bye\"", e)
	}
	if err := srv.Kick(id, wire.DisconnectKicked, "again"); !errors.Is(err, netstack.ErrNoSuchClient) {
		t.Fatalf("second Kick: %v, want ErrNoSuchClient", err)
	}
	if cl := srv.Clients(); len(cl) != 1 || cl[0].ID != other.ID() {
		t.Fatalf("Clients() = %+v, want only %d", cl, other.ID())
	}
}

func TestUDPServerCloseTellsClients(t *testing.T) {
	ev := newEvents()
	srv := quietServer(t, ev.hook)
	clients := []*netstack.Client{dial(t, srv, "one"), dial(t, srv, "two")}
	srv.Close()
	for _, c := range clients {
		waitDone(t, c)
		if r, _ := c.CloseReason(); r != wire.DisconnectServerShutdown {
			t.Errorf("client %d CloseReason = %v, want ServerShutdown", c.ID(), r)
		}
		if e := ev.waitDisconnect(t, c.ID()); e.reason != wire.DisconnectServerShutdown {
			t.Errorf("OnDisconnected(%d) = %v, want ServerShutdown", c.ID(), e.reason)
		}
		// Receive returns what was queued (GameStateSync), then ErrClosed.
		for i := 0; ; i++ {
			_, err := c.Receive(context.Background())
			if err != nil {
				if !errors.Is(err, netstack.ErrClosed) {
					t.Errorf("Receive after close: %v, want ErrClosed", err)
				}
				break
			}
			if i > 100 {
				t.Fatal("Receive keeps returning messages after the close")
			}
		}
	}
}

func TestUDPClientQuit(t *testing.T) {
	ev := newEvents()
	srv := quietServer(t, ev.hook)
	c := dial(t, srv, "leaver")
	id := c.ID()
	c.Close()
	if e := ev.waitDisconnect(t, id); e.reason != wire.DisconnectClientQuit {
		t.Fatalf("OnDisconnected reason %v, want ClientQuit", e.reason)
	}
	eventually(t, "slot freed", func() bool { return srv.SlotCount() == 0 })
	if r, _ := c.CloseReason(); r != wire.DisconnectClientQuit {
		t.Fatalf("client CloseReason = %v, want ClientQuit", r)
	}
}

func TestUDPSilentClientTimesOut(t *testing.T) {
	const timeout = 500 * time.Millisecond
	ev := newEvents()
	srv := quietServer(t, func(c *netstack.ServerConfig) {
		c.Timeout = timeout
		c.HeartbeatInterval = 50 * time.Millisecond
		ev.hook(c)
	})
	p := newRawPeer(t, srv.Addr())
	id := p.admit(srv.Pin(), "silent")
	last := p.lastSend // the Ack of GameStateSync; from now on the socket stays silent

	e := ev.waitDisconnect(t, id)
	if e.reason != wire.DisconnectTimeout {
		t.Fatalf("OnDisconnected reason %v (%q), want Timeout", e.reason, e.detail)
	}
	if el := e.at.Sub(last); el < timeout {
		t.Fatalf("timed out %v after the last datagram, before the %v timeout", el, timeout)
	}
	if srv.SlotCount() != 0 {
		t.Fatal("the timed-out slot was not freed")
	}
	// A timed-out peer is not told (§8: it is gone); heartbeats may have come.
	for _, d := range drain(t, p.conn, quietWait) {
		pkt, err := openFrame(p.res.S2C, d)
		if err != nil {
			t.Fatalf("datagram that does not open: % x", head(d))
		}
		if h, _, _ := wire.ParsePacket(pkt); h.Type == wire.TypeDisconnect {
			t.Fatal("a timed-out peer was sent a Disconnect")
		}
	}
}

func TestUDPHeartbeatPing(t *testing.T) {
	const interval = 50 * time.Millisecond
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.HeartbeatInterval = interval })
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "pinger", Pin: srv.Pin(), HeartbeatInterval: interval}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eventually(t, "a ping on both sides", func() bool {
		st, ok := srv.ClientStats(c.ID())
		return ok && st.Ping > 0 && c.Stats().Ping > 0
	})
	st, _ := srv.ClientStats(c.ID())
	if st.Ping > waitLong || c.Stats().Ping > waitLong {
		t.Fatalf("implausible ping: server %v, client %v", st.Ping, c.Stats().Ping)
	}
	t.Logf("ping: server %v, client %v", st.Ping, c.Stats().Ping)
}
