package client_test

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/netstack"
)

// udpRelay forwards datagrams between one client and a server over real
// loopback sockets until it is cut; from then on the path drops everything,
// as a path that went dead would.
type udpRelay struct {
	front, back *net.UDPConn
	cut         atomic.Bool
	client      atomic.Pointer[netip.AddrPort]
}

func newUDPRelay(t *testing.T, server netip.AddrPort) *udpRelay {
	t.Helper()
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	r := &udpRelay{front: listen(), back: listen()}
	t.Cleanup(func() { r.front.Close(); r.back.Close() })
	go r.pump(r.front, r.back, func(from netip.AddrPort) (netip.AddrPort, bool) {
		r.client.Store(&from)
		return server, true
	})
	go r.pump(r.back, r.front, func(netip.AddrPort) (netip.AddrPort, bool) {
		to := r.client.Load()
		if to == nil {
			return netip.AddrPort{}, false
		}
		return *to, true
	})
	return r
}

// pump copies datagrams read on in to out until in is closed.
func (r *udpRelay) pump(in, out *net.UDPConn, dest func(from netip.AddrPort) (netip.AddrPort, bool)) {
	buf := make([]byte, 65536)
	for {
		n, from, err := in.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		if to, ok := dest(from); ok && !r.cut.Load() {
			_, _ = out.WriteToUDPAddrPort(buf[:n], to)
		}
	}
}

func (r *udpRelay) addr() netip.AddrPort {
	return r.front.LocalAddr().(*net.UDPAddr).AddrPort()
}

// TestClientQuitAfterSayDelivers: `say ...; quit` leaves only once the
// server confirmed the line, and the script succeeds.
func TestClientQuitAfterSayDelivers(t *testing.T) {
	srv := newTestServer(t, nil)
	alice, bob := pinConsole(t, srv), pinConsole(t, srv)
	alice.connect(t, srv, "alice")
	bob.connect(t, srv, "bob")
	if code := alice.RunScript([]string{"say last words", "quit"}); code != 0 {
		t.Fatalf("exit code %d; output:\n%s", code, alice.out.String())
	}
	bob.exec(t, `wait "chat alice: last words" 10s`)
	if !strings.Contains(alice.out.String(), "disconnected: ClientQuit (client quit)\n") {
		t.Errorf("quit printed no disconnected line:\n%s", alice.out.String())
	}
}

// TestClientQuitUnconfirmedFails: when the server no longer answers, quit
// waits the linger (1 s), leaves anyway, and fails the script with a line
// saying what may be lost.
func TestClientQuitUnconfirmedFails(t *testing.T) {
	srv := newTestServer(t, nil)
	relay := newUDPRelay(t, srv.Addr())
	c := newConsole(t, client.Config{Pin: srv.Pin()})
	c.exec(t, "connect "+relay.addr().String()+" alice")
	relay.cut.Store(true)
	start := time.Now()
	code := c.RunScript([]string{"say anyone there?", "quit", "status"})
	took := time.Since(start)
	out := c.out.String()
	if code != 1 {
		t.Errorf("exit code %d, want 1; output:\n%s", code, out)
	}
	if want := "error: quit: netstack: the server did not confirm everything sent before the close: 1 reliable message(s) not acknowledged within 1s; they may not have arrived"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, "status:") {
		t.Errorf("the script went on after quit:\n%s", out)
	}
	if took < netstack.DefaultCloseLinger || took > netstack.DefaultCloseLinger+5*time.Second {
		t.Errorf("quit took %v, want about the linger (%v)", took, netstack.DefaultCloseLinger)
	}
	if err := c.Exec("say again"); !errors.Is(err, client.ErrNotConnected) {
		t.Errorf("say after quit: %v, want not connected", err)
	}
}
