//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/transport"
)

// waitLong bounds every wait of these tests: generous for a busy machine.
const waitLong = 10 * time.Second

// TestSharedSocketDemultiplexes: clients on one shared socket each send from
// their own address, and each reads exactly what was sent to that address.
func TestSharedSocketDemultiplexes(t *testing.T) {
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sock, err := newSharedSocket(srv.LocalAddr().(*net.UDPAddr).AddrPort())
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	var views []*view
	for i := range 3 {
		v, err := sock.view(netip.AddrFrom4([4]byte{127, 2, 255, byte(i + 1)}))
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
	}
	for i, v := range views {
		b := []byte(fmt.Sprintf("from %d", i))
		if n, err := v.WriteBatch([]transport.Message{{Buf: b, N: len(b), Addr: sock.server}}); n != 1 || err != nil {
			t.Fatalf("view %d wrote %d, %v", i, n, err)
		}
	}
	// The server sees each client at its own address (and the socket's
	// port), and answers each there, in reverse order.
	seen := map[netip.AddrPort]string{}
	_ = srv.SetReadDeadline(time.Now().Add(waitLong))
	buf := make([]byte, 100)
	for range views {
		n, from, err := srv.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		seen[from] = string(buf[:n])
	}
	for i := len(views) - 1; i >= 0; i-- {
		v := views[i]
		if got := seen[v.LocalAddr()]; got != fmt.Sprintf("from %d", i) {
			t.Fatalf("the server got %q from %v; all: %v", got, v.LocalAddr(), seen)
		}
		if _, err := srv.WriteToUDPAddrPort([]byte(fmt.Sprintf("to %d", i)), v.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	msgs := []transport.Message{{Buf: make([]byte, 100)}}
	for i, v := range views {
		_ = v.SetReadDeadline(time.Now().Add(waitLong))
		n, err := v.ReadBatch(msgs)
		if err != nil || n != 1 {
			t.Fatalf("view %d read %d, %v", i, n, err)
		}
		if got := string(msgs[0].Buf[:msgs[0].N]); got != fmt.Sprintf("to %d", i) || msgs[0].Addr != sock.server {
			t.Fatalf("view %d read %q from %v", i, got, msgs[0].Addr)
		}
	}
}

// TestSharedSocketRefusesAndDrops: a view writes to the server alone, and
// a datagram from anyone else is dropped, not read.
func TestSharedSocketRefusesAndDrops(t *testing.T) {
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	other, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	sock, err := newSharedSocket(srv.LocalAddr().(*net.UDPAddr).AddrPort())
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	v, err := sock.view(netip.AddrFrom4([4]byte{127, 2, 255, 9}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sock.view(netip.AddrFrom4([4]byte{127, 2, 255, 9})); err == nil {
		t.Fatal("a second view of one address was made")
	}
	b := []byte("x")
	if n, err := v.WriteBatch([]transport.Message{{Buf: b, N: 1, Addr: other.LocalAddr().(*net.UDPAddr).AddrPort()}}); n != 0 || err == nil {
		t.Fatalf("a write to another address than the server's: %d sent, %v", n, err)
	}
	if _, err := other.WriteToUDPAddrPort(b, v.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(waitLong); sock.Dropped.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("a datagram from another address than the server's was not dropped")
		}
	}
	_ = v.SetReadDeadline(time.Now())
	if n, err := v.ReadBatch([]transport.Message{{Buf: make([]byte, 10)}}); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %d, %v", n, err)
	}
}

// TestViewCloseEndsRead: Close ends a blocked ReadBatch with net.ErrClosed.
func TestViewCloseEndsRead(t *testing.T) {
	sock, err := newSharedSocket(netip.MustParseAddrPort("127.0.0.1:9"))
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	v, err := sock.view(netip.AddrFrom4([4]byte{127, 2, 255, 10}))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := v.ReadBatch([]transport.Message{{Buf: make([]byte, 10)}})
		done <- err
	}()
	time.Sleep(10 * time.Millisecond) // most likely blocked by now; either way it must end
	v.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read after Close: %v", err)
		}
	case <-time.After(waitLong):
		t.Fatal("Close did not end a blocked read")
	}
}
