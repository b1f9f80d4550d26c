package netstack_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/memlink"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// A close decided by one side delivers what that side sent before it
// (docs/protocol.md §6): a client's quit right after a chat line, the kick
// reason sent before a kick, the last messages before a shutdown.

const lingerMessages = 30

// lingerRig is a server and one admitted client over a link (a lossy
// memlink in virtual time, or real UDP on loopback).
type lingerRig struct {
	srv      *netstack.Server
	cli      *netstack.Client
	got      atomic.Int64 // reliable soak messages the server's handler received
	events   *events
	clientID uint32
}

func lingerLinks() map[string]func(t *testing.T, f func(t *testing.T, newRig func(*testing.T, time.Duration) *lingerRig)) {
	return map[string]func(t *testing.T, f func(t *testing.T, newRig func(*testing.T, time.Duration) *lingerRig)){
		"memlink 25% loss": func(t *testing.T, f func(t *testing.T, newRig func(*testing.T, time.Duration) *lingerRig)) {
			synctest.Test(t, func(t *testing.T) {
				link := memlink.Link{Loss: 0.25, Duplicate: 0.1, Latency: 40 * time.Millisecond, Jitter: 20 * time.Millisecond}
				srvConn, cliConn := memlink.Pair(20261204, link, link)
				f(t, func(t *testing.T, linger time.Duration) *lingerRig {
					return newLingerRig(t, linger, srvConn, cliConn, srvConn.AddrPort())
				})
			})
		},
		"udp": func(t *testing.T, f func(t *testing.T, newRig func(*testing.T, time.Duration) *lingerRig)) {
			f(t, func(t *testing.T, linger time.Duration) *lingerRig {
				return newLingerRig(t, linger, nil, nil, netip.AddrPort{})
			})
		},
	}
}

func newLingerRig(t *testing.T, linger time.Duration, srvConn, cliConn net.PacketConn, srvAddr netip.AddrPort) *lingerRig {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	r := &lingerRig{events: newEvents()}
	cfg := netstack.ServerConfig{Bind: "127.0.0.1", Conn: srvConn, Identity: priv, Registry: soakRegistry(t),
		Logger: slog.New(slog.DiscardHandler), Timeout: time.Minute, CloseLinger: linger}
	withGame(&cfg)
	r.events.hook(&cfg)
	srv, err := netstack.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	count := func(uint32, *wire.Header, []byte) { r.got.Add(1) }
	srv.Handle(soakReliable, count)
	srv.Handle(soakOrdered, count)
	srv.Start()
	t.Cleanup(func() { srv.Close() })
	if !srvAddr.IsValid() {
		srvAddr = srv.Addr()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srvAddr, Name: "lingerer", Pin: srv.Pin(),
		Conn: cliConn, Registry: soakRegistry(t), Timeout: time.Minute, CloseLinger: linger}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	r.srv, r.cli, r.clientID = srv, cli, cli.ID()
	return r
}

// payload returns message i of a burst.
func lingerPayload(i int) []byte { return []byte{byte(i), byte(i >> 8), 'x'} }

func TestClientCloseDeliversWhatItSent(t *testing.T) {
	for name, run := range lingerLinks() {
		t.Run(name, func(t *testing.T) {
			run(t, func(t *testing.T, newRig func(*testing.T, time.Duration) *lingerRig) {
				r := newRig(t, 10*time.Second) // generous: 25% loss each way
				for i := range lingerMessages {
					ch, typ := wire.Reliable, soakReliable
					if i%2 == 1 {
						ch, typ = wire.ReliableOrdered, soakOrdered
					}
					if err := r.cli.Send(typ, ch, lingerPayload(i)); err != nil {
						t.Fatal(err)
					}
				}
				r.cli.Close() // at once: no sleep, as a script's "say hi; quit"
				if got := r.got.Load(); got != lingerMessages {
					t.Fatalf("the server received %d of the %d messages sent before Close", got, lingerMessages)
				}
				if n := r.cli.Unconfirmed(); n != 0 {
					t.Fatalf("Unconfirmed after Close = %d", n)
				}
				if d := r.events.waitDisconnect(t, r.clientID); d.reason != wire.DisconnectClientQuit {
					t.Fatalf("server saw %v %q, want ClientQuit", d.reason, d.detail)
				}
			})
		})
	}
}

// receiveUntilClosed collects the soak messages a client receives until its
// connection closes.
func receiveUntilClosed(t *testing.T, c *netstack.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := 0
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatal("the client was never closed")
			}
			return n
		}
		if m.Header.Type == soakReliable || m.Header.Type == soakOrdered {
			n++
		}
	}
}

func TestKickAndShutdownDeliverWhatWasSent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		close  func(r *lingerRig)
		reason wire.DisconnectReason
		queue  bool // QueueFlush (the tick writer packs) instead of Flush
	}{
		{"kick", func(r *lingerRig) { _ = r.srv.Kick(r.clientID, wire.DisconnectKicked, "spamming") }, wire.DisconnectKicked, false},
		{"shutdown", func(r *lingerRig) { r.srv.Close() }, wire.DisconnectServerShutdown, false},
		{"queued shutdown", func(r *lingerRig) { r.srv.Close() }, wire.DisconnectServerShutdown, true},
	} {
		for name, run := range lingerLinks() {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				run(t, func(t *testing.T, newRig func(*testing.T, time.Duration) *lingerRig) {
					r := newRig(t, 10*time.Second)
					for i := range lingerMessages {
						if err := r.srv.Send(r.clientID, soakOrdered, wire.ReliableOrdered, lingerPayload(i)); err != nil {
							t.Fatal(err)
						}
					}
					if tc.queue {
						r.srv.QueueFlush()
					} else {
						r.srv.Flush()
					}
					tc.close(r)
					// The game sees the client leave at once.
					if d := r.events.waitDisconnect(t, r.clientID); d.reason != tc.reason {
						t.Fatalf("OnDisconnected %v %q", d.reason, d.detail)
					}
					if err := r.srv.Send(r.clientID, soakOrdered, wire.ReliableOrdered, lingerPayload(0)); err == nil {
						t.Fatal("Send to a kicked client succeeded")
					}
					if got := receiveUntilClosed(t, r.cli); got != lingerMessages {
						t.Fatalf("the client received %d of the %d messages sent before the close", got, lingerMessages)
					}
					if reason, detail := r.cli.CloseReason(); reason != tc.reason {
						t.Fatalf("client closed with %v %q, want %v", reason, detail, tc.reason)
					}
				})
			})
		}
	}
}

// TestKickLingerIsBounded: a kicked client that acknowledges nothing holds
// its slot for the linger and no longer.
func TestKickLingerIsBounded(t *testing.T) {
	ev := newEvents()
	srv := quietServer(t, func(c *netstack.ServerConfig) {
		ev.hook(c)

	})
	p := newRawPeer(t, srv.Addr())
	id := p.admit(srv.Pin(), "silent")
	for i := range 5 {
		if err := srv.Send(id, gamemsg.TypeChatMessage, wire.Reliable, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Sender: "admin", Text: "bye " + string(rune('a'+i))})); err != nil {
			t.Fatal(err)
		}
	}
	srv.Flush()
	start := time.Now()
	if err := srv.Kick(id, wire.DisconnectKicked, "silent"); err != nil {
		t.Fatal(err)
	}
	ev.waitDisconnect(t, id)
	eventually(t, "the kicked client's slot is freed", func() bool { return srv.SlotCount() == 0 })
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("slot freed after %v: the linger did not wait", took)
	}
	if err := srv.Kick(id, wire.DisconnectKicked, "again"); err != netstack.ErrNoSuchClient {
		t.Fatalf("a second Kick: %v", err)
	}
}

// TestClientFinishedTravelsAlone: until it is admitted a client sends its
// ClientFinished alone in its body (docs/protocol.md §3.7), so a lost first
// ClientFinished is resent in a datagram the server accepts, even when a
// heartbeat falls due at every moment (a 1 ms heartbeat interval).
func TestClientFinishedTravelsAlone(t *testing.T) {
	srv := quietServer(t, nil)
	proxy := newDropFirstSealed(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second) // within the half-open timeout
	defer cancel()
	c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: proxy.addr, Name: "alone", Pin: srv.Pin(),
		HeartbeatInterval: time.Millisecond})) // a heartbeat is due at every resend of ClientFinished
	if err != nil {
		t.Fatalf("dial through a path that lost the first ClientFinished: %v", err)
	}
	defer c.Close()
	if proxy.dropped.Load() == 0 {
		t.Fatal("the proxy dropped no sealed datagram")
	}
}

// dropFirstSealed forwards UDP between one client and a server, dropping
// the client's sealed datagrams for 300 ms from the first one (its
// ClientFinished and the first resends).
type dropFirstSealed struct {
	addr    netip.AddrPort
	dropped atomic.Int32
}

const dropSealedFor = 300 * time.Millisecond

func newDropFirstSealed(t *testing.T, server netip.AddrPort) *dropFirstSealed {
	t.Helper()
	front := udpSocket(t, loopback)
	back := udpSocket(t, loopback)
	d := &dropFirstSealed{addr: localAddr(front)}
	var client atomic.Pointer[netip.AddrPort]
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		buf := make([]byte, wire.MaxDatagram)
		var firstSealed time.Time
		for {
			n, from, err := front.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			client.Store(&from)
			if n > 0 && buf[0] == 0x02 {
				if firstSealed.IsZero() {
					firstSealed = time.Now()
				}
				if time.Since(firstSealed) < dropSealedFor {
					d.dropped.Add(1)
					continue
				}
			}
			_, _ = back.WriteToUDPAddrPort(buf[:n], server)
		}
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, wire.MaxDatagram)
		for {
			n, _, err := back.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if to := client.Load(); to != nil {
				_, _ = front.WriteToUDPAddrPort(buf[:n], *to)
			}
		}
	}()
	t.Cleanup(func() { front.Close(); back.Close(); wg.Wait() })
	return d
}

// TestCleanQuitIsNoSecurityDrop: the two extra copies of a client's
// Disconnect reach a closed session; they authenticate under it, so they
// count as after_close, never as security drops (an alert watches those).
func TestCleanQuitIsNoSecurityDrop(t *testing.T) {
	srv := quietServer(t, nil)
	before := srv.Stats()
	for i := range 3 {
		c := dial(t, srv, "quitter"+string(rune('a'+i)))
		if err := c.Send(gamemsg.TypeChatMessage, wire.Reliable, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "bye"})); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	eventually(t, "6 late Disconnect copies counted", func() bool { return srv.Stats().LateFrames-before.LateFrames == 6 })
	if got := srv.Stats().SecurityDrops - before.SecurityDrops; got != 0 {
		t.Fatalf("3 clean quits counted %d security drops", got)
	}
	// Each client's ClientFinished, chat line and Disconnect at least.
	if got := srv.Stats().MessagesReceived - before.MessagesReceived; got < 9 {
		t.Fatalf("the server's MessagesReceived grew by %d for 3 clients that each sent 3 messages", got)
	}
	// From an endpoint whose session just closed, a frame that authenticates
	// is late; one that does not is still a security drop.
	p := newRawPeer(t, srv.Addr())
	p.admit(srv.Pin(), "forger")
	p.sendUnreliable(wire.TypeDisconnect, wire.AppendDisconnect(nil, &wire.Disconnect{Reason: uint8(wire.DisconnectClientQuit)}))
	eventually(t, "the raw peer's session closed", func() bool { return srv.SlotCount() == 0 })
	late := srv.Stats().LateFrames
	p.sendUnreliable(wire.TypeHeartbeat, wire.AppendHeartbeat(nil, &wire.Heartbeat{Token: 7}))
	eventually(t, "a genuine late frame counted after_close", func() bool { return srv.Stats().LateFrames == late+1 })
	p.write(sealWith([32]byte{1}, 0, 99, []byte("not a real frame")))
	eventually(t, "a forged frame counted as a security drop", func() bool { return srv.Stats().SecurityDrops == before.SecurityDrops+1 })
}
