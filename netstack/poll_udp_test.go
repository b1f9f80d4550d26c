package netstack_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// dropWrites is a transport whose next write is lost while drop is set
// (then it clears): the client's own retransmission must recover it.
type dropWrites struct {
	transport.Transport
	drop atomic.Bool
}

func (d *dropWrites) WriteBatch(msgs []transport.Message) (int, error) {
	if d.drop.CompareAndSwap(true, false) {
		return len(msgs), nil
	}
	return d.Transport.WriteBatch(msgs)
}

// polledRig is a Polled client over its own loopback socket, which the
// test reads, handing every datagram to Ingest on the test's goroutine.
type polledRig struct {
	t    *testing.T
	c    *netstack.Client
	conn *net.UDPConn
	tr   *dropWrites
	buf  []byte
	msgs []netstack.Message
}

// next reads datagrams for up to d and returns the echoes they carried;
// skip drops the first datagram read unseen (a loss on the way in).
func (r *polledRig) next(d time.Duration, skip bool) []string {
	r.t.Helper()
	_ = r.conn.SetReadDeadline(time.Now().Add(d))
	n, from, err := r.conn.ReadFromUDPAddrPort(r.buf)
	if err != nil {
		return nil
	}
	if skip {
		return nil
	}
	r.msgs = r.c.Ingest(r.msgs[:0], from, r.buf[:n], time.Now())
	var out []string
	for _, m := range r.msgs {
		if m.Header.Type == benchType {
			out = append(out, string(m.Payload))
		}
	}
	return out
}

// collect reads until want echoes arrived or the wait ends.
func (r *polledRig) collect(want int) []string {
	r.t.Helper()
	var got []string
	for deadline := time.Now().Add(waitLong); len(got) < want && time.Now().Before(deadline); {
		got = append(got, r.next(100*time.Millisecond, false)...)
	}
	return got
}

// TestPolledClientIngestsOnCallersGoroutine: a Polled client's messages
// come back from Ingest, never through Receive, in order on an ordered
// channel; a datagram lost on the way in is recovered by the server's
// retransmission and one lost on the way out by the client's own timers;
// a datagram from another address is dropped and counted; Close completes
// while the caller keeps ingesting (its Acks end the linger).
func TestPolledClientIngestsOnCallersGoroutine(t *testing.T) {
	reg := benchRegistry(t, wire.ReliableOrdered)
	srv := newTestServerTB(t, func(c *netstack.ServerConfig) { c.Registry = reg })
	srv.Handle(benchType, func(id uint32, h *wire.Header, p []byte) { _ = srv.Send(id, benchType, h.Channel, p) })
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if _, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "x", Pin: srv.Pin(), Polled: true})); err == nil {
		t.Fatal("Dial took a Polled client without a Transport or Conn for its caller to read")
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := &polledRig{t: t, conn: conn, tr: &dropWrites{Transport: transport.FromPacketConn(conn)}, buf: make([]byte, 65536)}
	r.c, err = netstack.Dial(ctx, gameClient(netstack.ClientConfig{
		Server: srv.Addr(), Name: "polled", Pin: srv.Pin(), Registry: reg, Transport: r.tr, Polled: true,
	}))
	if err != nil {
		t.Fatal(err)
	}
	// What came with the admission was read by the receive goroutine
	// before Dial returned: Receive has it, the welcome among it.
	polled, stop := context.WithCancel(context.Background())
	stop()
	welcomed := false
	for {
		m, err := r.c.Receive(polled)
		if err != nil {
			break
		}
		welcomed = welcomed || m.Header.Type == r.c.Welcome().Header.Type
	}
	if !welcomed {
		t.Fatal("Receive did not return the admission's welcome")
	}

	send := func(from, to int) {
		now := time.Now()
		for i := from; i < to; i++ {
			if err := r.c.SendAt(benchType, wire.ReliableOrdered, fmt.Appendf(nil, "m%02d", i), now); err != nil {
				t.Fatal(err)
			}
		}
		r.c.FlushNow()
	}
	want := func(got []string, from, to int) {
		t.Helper()
		if len(got) != to-from {
			t.Fatalf("echoes %q, want m%02d..m%02d", got, from, to-1)
		}
		for i, s := range got {
			if s != fmt.Sprintf("m%02d", from+i) {
				t.Fatalf("echoes %q out of order, want m%02d..m%02d", got, from, to-1)
			}
		}
	}

	send(0, 20)
	want(r.collect(20), 0, 20)

	send(20, 25) // the echoes' datagram is lost on the way in
	if got := r.next(waitLong, true); got != nil {
		t.Fatalf("a skipped datagram gave %q", got)
	}
	want(r.collect(5), 20, 25)

	r.tr.drop.Store(true) // the messages' datagram is lost on the way out
	send(25, 30)
	want(r.collect(5), 25, 30)

	if m, err := r.c.Receive(polled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Receive returned %v (%v): a Polled client delivers through Ingest only", m.Header.Type, err)
	}

	before := r.c.Stats().PacketsDropped
	send(30, 31)
	_ = conn.SetReadDeadline(time.Now().Add(waitLong))
	n, from, err := conn.ReadFromUDPAddrPort(r.buf)
	if err != nil {
		t.Fatal(err)
	}
	other := netip.AddrPortFrom(from.Addr(), from.Port()+1)
	if got := r.c.Ingest(nil, other, r.buf[:n], time.Now()); len(got) != 0 {
		t.Fatalf("a datagram from %v delivered %d messages", other, len(got))
	}
	if after := r.c.Stats().PacketsDropped; after != before+1 {
		t.Fatalf("PacketsDropped %d after a datagram from another address, %d before", after, before)
	}
	want(r.collect(1), 30, 31) // the server resends what that copy carried

	send(31, 32)
	closed := make(chan error, 1)
	go func() { closed <- r.c.Close() }()
	for deadline := time.Now().Add(waitLong); ; {
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Close did not return while the caller ingested")
		}
		r.next(20*time.Millisecond, false)
	}
}

// TestPolledClientRebindsOnlyToACallersSocket: a Polled client's caller
// reads its socket, so Rebind must be given the new one; Rebind(nil),
// which would open a socket nobody reads, is refused.
func TestPolledClientRebindsOnlyToACallersSocket(t *testing.T) {
	srv := newTestServerTB(t, nil)
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "polled", Pin: srv.Pin(), Conn: conn, Polled: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(wire.DisconnectClientQuit, "")
	if err := c.Rebind(nil); !errors.Is(err, netstack.ErrCannotRebind) {
		t.Fatalf("Rebind(nil) of a Polled client: %v, want ErrCannotRebind", err)
	}
	next, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Rebind(next); err != nil {
		t.Fatalf("Rebind to the caller's new socket: %v", err)
	}
}
