package netstack

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
)

// darkLink is a UDP relay on the loopback interface between clients and a
// server, like a NAT: each client endpoint gets its own upstream socket,
// so a client that comes back from a new socket reaches the server from a
// new address. While dark it drops everything both ways: an outage on a
// real path, with real sockets at both ends.
type darkLink struct {
	t      testing.TB
	conn   *net.UDPConn
	server netip.AddrPort
	dark   atomic.Bool

	mu   sync.Mutex
	ups  map[netip.AddrPort]*net.UDPConn
	done chan struct{}
	wg   sync.WaitGroup
}

func newDarkLink(t testing.TB, server netip.AddrPort) *darkLink {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	l := &darkLink{t: t, conn: c, server: server, ups: map[netip.AddrPort]*net.UDPConn{}, done: make(chan struct{})}
	l.wg.Add(1)
	go l.down()
	t.Cleanup(l.close)
	return l
}

// Addr is where clients send.
func (l *darkLink) Addr() netip.AddrPort { return l.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// SetDark switches the outage on or off.
func (l *darkLink) SetDark(on bool) { l.dark.Store(on) }

// down relays client datagrams to the server through the client's upstream socket.
func (l *darkLink) down() {
	defer l.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, from, err := l.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		if l.dark.Load() {
			continue
		}
		up := l.upstream(from)
		if up != nil {
			_, _ = up.WriteToUDPAddrPort(buf[:n], l.server)
		}
	}
}

func (l *darkLink) upstream(client netip.AddrPort) *net.UDPConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if up := l.ups[client]; up != nil {
		return up
	}
	select {
	case <-l.done:
		return nil
	default:
	}
	up, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil
	}
	l.ups[client] = up
	l.wg.Add(1)
	go l.up(up, client)
	return up
}

// up relays the server's datagrams back to one client.
func (l *darkLink) up(up *net.UDPConn, client netip.AddrPort) {
	defer l.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, _, err := up.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		if !l.dark.Load() {
			_, _ = l.conn.WriteToUDPAddrPort(buf[:n], client)
		}
	}
}

func (l *darkLink) close() {
	l.mu.Lock()
	close(l.done)
	for _, up := range l.ups {
		up.Close()
	}
	l.mu.Unlock()
	l.conn.Close()
	l.wg.Wait()
}
