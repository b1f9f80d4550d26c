package transport_test

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/memlink"
	"github.com/sparkhost/sparkhost/netstack/transport"
)

// TestPacketConnAdapter: an in-memory link behind the adapter moves
// datagrams both ways with their addresses, honours the read deadline,
// ends a read at Close, and allocates nothing per datagram.
func TestPacketConnAdapter(t *testing.T) {
	a, b := memlink.Pair(1, memlink.Link{}, memlink.Link{})
	ta, tb := transport.FromPacketConn(a), transport.FromPacketConn(b)
	defer ta.Close()
	defer tb.Close()
	if ta.LocalAddr() != a.AddrPort() || ta.MaxDatagram() != transport.MaxUDPDatagram {
		t.Fatalf("LocalAddr %v, MaxDatagram %d", ta.LocalAddr(), ta.MaxDatagram())
	}
	out := []transport.Message{
		{Buf: []byte("one"), N: 3, Addr: b.AddrPort()},
		{Buf: []byte("two!"), N: 4, Addr: b.AddrPort()},
	}
	if n, err := ta.WriteBatch(out); n != 2 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	in := []transport.Message{{Buf: make([]byte, 64)}, {Buf: make([]byte, 64)}}
	_ = tb.SetReadDeadline(time.Now().Add(5 * time.Second))
	for _, want := range []string{"one", "two!"} {
		n, err := tb.ReadBatch(in)
		if err != nil || n != 1 {
			t.Fatalf("ReadBatch = %d, %v", n, err)
		}
		if got := in[0].Buf[:in[0].N]; !bytes.Equal(got, []byte(want)) || in[0].Addr != a.AddrPort() || in[0].Validated {
			t.Fatalf("read %q from %v (validated %v), want %q from %v", got, in[0].Addr, in[0].Validated, want, a.AddrPort())
		}
	}

	_ = tb.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := tb.ReadBatch(in); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadBatch after the deadline: %v", err)
	}
	_ = tb.SetReadDeadline(time.Time{})

	one := out[:1]
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ta.WriteBatch(one); err != nil {
			panic(err)
		}
		if _, err := tb.ReadBatch(in); err != nil {
			panic(err)
		}
	})
	// memlink copies each datagram in flight (its own allocation); the
	// adapter adds none.
	if allocs > 1 {
		t.Fatalf("%.1f allocations per datagram through the adapter", allocs)
	}

	done := make(chan error, 1)
	go func() { _, err := tb.ReadBatch(in); done <- err }()
	time.Sleep(10 * time.Millisecond)
	tb.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("ReadBatch after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadBatch still blocked 10 s after Close")
	}
}

// TestFromPacketConnUDP: a *net.UDPConn gets the batched UDP transport.
func TestFromPacketConnUDP(t *testing.T) {
	uc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Skip(err)
	}
	tr := transport.FromPacketConn(uc)
	defer tr.Close()
	if _, ok := tr.(*transport.UDP); !ok {
		t.Fatalf("FromPacketConn(*net.UDPConn) = %T, want *transport.UDP", tr)
	}
	if tr.LocalAddr() != uc.LocalAddr().(*net.UDPAddr).AddrPort() {
		t.Fatalf("LocalAddr %v", tr.LocalAddr())
	}
}
