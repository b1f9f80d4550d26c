package netstack_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// narrowTransport is a real UDP transport that says it carries datagrams of
// at most max bytes (as WebTransport carries fewer than UDP) and records
// the largest sealed datagram written through it.
type narrowTransport struct {
	*transport.UDP
	max         int
	largestSeal atomic.Int64
}

func (n *narrowTransport) MaxDatagram() int { return n.max }

func (n *narrowTransport) WriteBatch(msgs []transport.Message) (int, error) {
	for _, m := range msgs {
		if m.N > 0 && m.Buf[0] == 0x02 && int64(m.N) > n.largestSeal.Load() {
			n.largestSeal.Store(int64(m.N))
		}
	}
	return n.UDP.WriteBatch(msgs)
}

func narrow(t *testing.T, max int) *narrowTransport {
	t.Helper()
	u, err := transport.ListenUDP("udp4", netip.AddrPortFrom(loopback, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return &narrowTransport{UDP: u, max: max}
}

const typeBulk wire.MessageType = 1100

// TestSessionPacksToTransportMax: with the default datagram size (1200) over
// transports that carry at most 1100 bytes, both ends pack, fragment and
// seal into datagrams of at most 1100 bytes, and a 5000-byte reliable
// message still crosses both ways.
func TestSessionPacksToTransportMax(t *testing.T) {
	const max = 1100
	reg := gamemsg.NewRegistry()
	if err := reg.Register("fit-test", wire.Schema{ID: typeBulk, Name: "bulk", Direction: wire.BothDirections, Channel: wire.ReliableOrdered,
		MinLen: 0, MaxLen: 8000, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true}); err != nil {
		t.Fatal(err)
	}
	st, ct := narrow(t, max), narrow(t, max)
	var srv *netstack.Server
	srv = quietServer(t, func(c *netstack.ServerConfig) { c.Transport, c.Registry = st, reg })
	srv.Handle(typeBulk, func(id uint32, _ *wire.Header, p []byte) { srv.Send(id, typeBulk, wire.ReliableOrdered, p) })
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cli, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "narrow", Pin: srv.Pin(), Transport: ct, Registry: reg}))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	big := bytes.Repeat([]byte("sparkhost"), 5000/9)
	if err := cli.Send(typeBulk, wire.ReliableOrdered, big); err != nil {
		t.Fatal(err)
	}
	cli.Flush()
	for {
		m, err := cli.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Type == typeBulk {
			if !bytes.Equal(m.Payload, big) {
				t.Fatalf("echo of %d bytes differs from the %d sent", len(m.Payload), len(big))
			}
			break
		}
	}
	for name, tr := range map[string]*narrowTransport{"server": st, "client": ct} {
		if got := tr.largestSeal.Load(); got > max || got == 0 {
			t.Errorf("%s: largest sealed datagram %d bytes; the transport carries %d", name, got, max)
		}
	}
}

// TestTooNarrowTransportRefused: a transport that cannot carry a useful
// datagram is refused by NewServer and Dial, with the sizes named.
func TestTooNarrowTransportRefused(t *testing.T) {
	_, err := netstack.NewServer(netstack.ServerConfig{Transport: narrow(t, 500), Identity: ed25519.NewKeyFromSeed(make([]byte, 32))})
	if err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("NewServer over a 500-byte transport: %v", err)
	}
	_, err = netstack.Dial(context.Background(), netstack.ClientConfig{Server: netip.MustParseAddrPort("127.0.0.1:9"), Pin: "ed25519:" + strings.Repeat("A", 43), Transport: narrow(t, 500)})
	if err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("Dial over a 500-byte transport: %v", err)
	}
}
