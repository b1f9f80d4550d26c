package transport

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

func listen(t testing.TB, network, addr string) *UDP {
	t.Helper()
	u, err := ListenUDP(network, netip.MustParseAddrPort(addr), 0)
	if err != nil {
		t.Skipf("%s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { u.Close() })
	return u
}

// slots returns n read slots of size bytes.
func slots(n, size int) []Message {
	msgs := make([]Message, n)
	for i := range msgs {
		msgs[i].Buf = make([]byte, size)
	}
	return msgs
}

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
			r, w := listen(t, tc.rnet, tc.raddr), listen(t, tc.wnet, tc.waddr)
			to := netip.AddrPortFrom(netip.MustParseAddr(tc.to), r.LocalAddr().Port())
			if runtime.GOOS == "linux" && (!w.Batched() || !r.Batched()) {
				t.Fatalf("linux: batched writer %v, reader %v", w.Batched(), r.Batched())
			}
			const n = 20 // more than one batch each way
			msgs := make([]Message, n)
			for i := range msgs {
				b := bytes.Repeat([]byte{byte(i)}, 1+i*50)
				msgs[i] = Message{Buf: b, N: len(b), Addr: to}
			}
			if sent, err := w.WriteBatch(msgs); sent != n || err != nil {
				t.Fatalf("WriteBatch = %d, %v", sent, err)
			}
			from := w.LocalAddr()
			got := 0
			in := slots(8, 2048)
			_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
			for got < n {
				k, err := r.ReadBatch(in)
				if err != nil {
					t.Fatalf("after %d datagrams: %v", got, err)
				}
				for _, m := range in[:k] {
					want := bytes.Repeat([]byte{byte(got)}, 1+got*50)
					if !bytes.Equal(m.Buf[:m.N], want) {
						t.Fatalf("datagram %d: %d bytes, want %d", got, m.N, len(want))
					}
					if m.Addr.Port() != from.Port() || !m.Addr.Addr().Is4() && tc.to == "127.0.0.1" {
						t.Fatalf("datagram %d from %v, want port %d (IPv4 unmapped)", got, m.Addr, from.Port())
					}
					if m.Validated {
						t.Fatalf("datagram %d: a UDP source claimed validated", got)
					}
					got++
				}
			}
		})
	}
}

// TestReadDeadline: a read deadline ends a blocked batch read, and a single
// read, with a timeout.
func TestReadDeadline(t *testing.T) {
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprint(n, " slots"), func(t *testing.T) {
			u := listen(t, "udp4", "127.0.0.1:0")
			_ = u.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if k, err := u.ReadBatch(slots(n, 64)); err == nil {
				t.Fatalf("ReadBatch = %d, nil; want a timeout", k)
			} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
				t.Fatalf("ReadBatch error %v, want a timeout", err)
			}
		})
	}
}

// TestCloseEndsRead: Close ends a blocked read with net.ErrClosed.
func TestCloseEndsRead(t *testing.T) {
	u := listen(t, "udp4", "127.0.0.1:0")
	done := make(chan error, 1)
	go func() {
		_, err := u.ReadBatch(slots(4, 64))
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	u.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("ReadBatch returned no error after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadBatch still blocked 10 s after Close")
	}
}

// TestTruncated: a datagram longer than the slot is cut to the slot.
func TestTruncated(t *testing.T) {
	r, w := listen(t, "udp4", "127.0.0.1:0"), listen(t, "udp4", "127.0.0.1:0")
	if _, err := w.WriteBatch([]Message{{Buf: make([]byte, 100), N: 100, Addr: r.LocalAddr()}}); err != nil {
		t.Fatal(err)
	}
	in := slots(4, 16)
	_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.ReadBatch(in); err != nil || n != 1 || in[0].N != 16 {
		t.Fatalf("ReadBatch = %d, %v, N %d; want 1 datagram cut to 16", n, err, in[0].N)
	}
}

// TestNoAllocations: steady-state batch reads and writes allocate nothing.
func TestNoAllocations(t *testing.T) {
	r, w := listen(t, "udp4", "127.0.0.1:0"), listen(t, "udp4", "127.0.0.1:0")
	msgs := make([]Message, 8)
	for i := range msgs {
		msgs[i] = Message{Buf: make([]byte, 100), N: 100, Addr: r.LocalAddr()}
	}
	in := slots(8, 2048)
	_ = r.SetReadDeadline(time.Now().Add(time.Minute))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := w.WriteBatch(msgs); err != nil {
			panic(err)
		}
		for got := 0; got < len(msgs); {
			n, err := r.ReadBatch(in)
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

// TestOneAtATime: batches of one each way (a client's reads and a flush of
// one datagram) move whole datagrams with their source, over IPv4, IPv6
// and from IPv4 to a dual-stack socket; a datagram too large for UDP is
// refused alone.
func TestOneAtATime(t *testing.T) {
	for _, tc := range []struct{ rnet, raddr, wnet, waddr, to string }{
		{"udp4", "127.0.0.1:0", "udp4", "127.0.0.1:0", "127.0.0.1"},
		{"udp6", "[::1]:0", "udp6", "[::1]:0", "::1"},
		{"udp", "[::]:0", "udp4", "127.0.0.1:0", "127.0.0.1"},
	} {
		t.Run(tc.rnet+" from "+tc.wnet, func(t *testing.T) {
			r, w := listen(t, tc.rnet, tc.raddr), listen(t, tc.wnet, tc.waddr)
			to := netip.AddrPortFrom(netip.MustParseAddr(tc.to), r.LocalAddr().Port())
			big := Message{Buf: make([]byte, 1<<16), N: 1 << 16, Addr: to} // beyond IPv4 and IPv6
			if sent, err := w.WriteBatch([]Message{big}); sent != 0 || err == nil {
				t.Fatalf("WriteBatch of %d bytes = %d, %v; want 0 and an error", big.N, sent, err)
			}
			in := slots(1, 2048)
			_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
			for i := range 5 {
				b := bytes.Repeat([]byte{byte(i)}, 1+i*100)
				if sent, err := w.WriteBatch([]Message{{Buf: b, N: len(b), Addr: to}}); sent != 1 || err != nil {
					t.Fatalf("WriteBatch = %d, %v", sent, err)
				}
				if n, err := r.ReadBatch(in); n != 1 || err != nil {
					t.Fatalf("ReadBatch = %d, %v", n, err)
				}
				if m := in[0]; !bytes.Equal(m.Buf[:m.N], b) || m.Addr.Port() != w.LocalAddr().Port() || m.Addr.Addr().Is4In6() {
					t.Fatalf("datagram %d: %d bytes from %v; want %d from port %d", i, m.N, m.Addr, len(b), w.LocalAddr().Port())
				}
			}
		})
	}
}
