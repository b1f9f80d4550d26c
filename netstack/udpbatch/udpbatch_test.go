package udpbatch

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

func listen(t testing.TB, network, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Skipf("%s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func localAddr(c net.PacketConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// TestBatchRoundTrip writes a batch from one socket to another and reads it
// back in batches, over IPv4 and IPv6 loopback and from an IPv4 sender to a
// dual-stack IPv6 socket.
func TestBatchRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, rnet, raddr, wnet, waddr, to string }{
		{"ipv4", "udp4", "127.0.0.1:0", "udp4", "127.0.0.1:0", "127.0.0.1"},
		{"ipv6", "udp6", "[::1]:0", "udp6", "[::1]:0", "::1"},
		{"ipv4 to dual stack", "udp", "[::]:0", "udp4", "127.0.0.1:0", "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, wc := listen(t, tc.rnet, tc.raddr), listen(t, tc.wnet, tc.waddr)
			to := netip.AddrPortFrom(netip.MustParseAddr(tc.to), localAddr(rc).Port())
			w, r := NewWriter(wc, 8), NewReader(rc, 8, 2048)
			if runtime.GOOS == "linux" && (!w.Batched() || !r.Batched()) {
				t.Fatalf("linux: batched writer %v, reader %v", w.Batched(), r.Batched())
			}
			const n = 20 // more than one batch each way
			msgs := make([]Message, n)
			for i := range msgs {
				b := bytes.Repeat([]byte{byte(i)}, 1+i*50)
				msgs[i] = Message{Buf: b, N: len(b), Addr: to}
			}
			if sent, err := w.Write(msgs); sent != n || err != nil {
				t.Fatalf("Write = %d, %v", sent, err)
			}
			from := localAddr(wc)
			got := 0
			_ = rc.SetReadDeadline(time.Now().Add(5 * time.Second))
			for got < n {
				k, err := r.Read()
				if err != nil {
					t.Fatalf("after %d datagrams: %v", got, err)
				}
				for _, m := range r.Msgs[:k] {
					want := bytes.Repeat([]byte{byte(got)}, 1+got*50)
					if !bytes.Equal(m.Buf[:m.N], want) {
						t.Fatalf("datagram %d: %d bytes, want %d", got, m.N, len(want))
					}
					if m.Addr.Port() != from.Port() || !m.Addr.Addr().Is4() && tc.to == "127.0.0.1" {
						t.Fatalf("datagram %d from %v, want port %d (IPv4 unmapped)", got, m.Addr, from.Port())
					}
					got++
				}
			}
		})
	}
}

// TestReadDeadline: a read deadline ends a blocked batch read.
func TestReadDeadline(t *testing.T) {
	c := listen(t, "udp4", "127.0.0.1:0")
	r := NewReader(c, 4, 64)
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if n, err := r.Read(); err == nil {
		t.Fatalf("Read = %d, nil; want a timeout", n)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("Read error %v, want a timeout", err)
	}
}

// TestTruncated: a datagram longer than the slot is cut to the slot.
func TestTruncated(t *testing.T) {
	rc, wc := listen(t, "udp4", "127.0.0.1:0"), listen(t, "udp4", "127.0.0.1:0")
	r := NewReader(rc, 4, 16)
	if _, err := wc.WriteToUDPAddrPort(make([]byte, 100), localAddr(rc)); err != nil {
		t.Fatal(err)
	}
	_ = rc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.Read(); err != nil || n != 1 || r.Msgs[0].N != 16 {
		t.Fatalf("Read = %d, %v, N %d; want 1 datagram cut to 16", n, err, r.Msgs[0].N)
	}
}

// TestNoAllocations: steady-state batch reads and writes allocate nothing.
func TestNoAllocations(t *testing.T) {
	rc, wc := listen(t, "udp4", "127.0.0.1:0"), listen(t, "udp4", "127.0.0.1:0")
	w, r := NewWriter(wc, 8), NewReader(rc, 8, 2048)
	msgs := make([]Message, 8)
	for i := range msgs {
		msgs[i] = Message{Buf: make([]byte, 100), N: 100, Addr: localAddr(rc)}
	}
	_ = rc.SetReadDeadline(time.Now().Add(time.Minute))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := w.Write(msgs); err != nil {
			panic(err)
		}
		for got := 0; got < len(msgs); {
			n, err := r.Read()
			if err != nil {
				panic(fmt.Sprint("read: ", err))
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per batch, want 0", allocs)
	}
}
