// Package udprelay is a UDP relay on the loopback interface for tests: it
// stands between clients and a server like a NAT (each client endpoint
// gets its own upstream socket, so a client that comes back from a new
// socket reaches the server from a new address) and can go dark — drop
// everything both ways — to make an outage on a real path, with real
// kernel sockets at both ends.
package udprelay

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Relay relays datagrams between clients and one server.
type Relay struct {
	conn   *net.UDPConn
	server netip.AddrPort
	dark   atomic.Bool

	mu   sync.Mutex
	ups  map[netip.AddrPort]*net.UDPConn
	done chan struct{}
	wg   sync.WaitGroup
}

// New starts a relay to server (an IPv4 loopback address) on 127.0.0.1.
// Close it when done.
func New(server netip.AddrPort) (*Relay, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	l := &Relay{conn: c, server: server, ups: map[netip.AddrPort]*net.UDPConn{}, done: make(chan struct{})}
	l.wg.Add(1)
	go l.down()
	return l, nil
}

// Addr is where clients send.
func (l *Relay) Addr() netip.AddrPort { return l.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// SetDark switches the outage on or off.
func (l *Relay) SetDark(on bool) { l.dark.Store(on) }

// down relays client datagrams to the server through the client's upstream socket.
func (l *Relay) down() {
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

func (l *Relay) upstream(client netip.AddrPort) *net.UDPConn {
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
func (l *Relay) up(up *net.UDPConn, client netip.AddrPort) {
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

// Close stops the relay and waits for its goroutines.
func (l *Relay) Close() {
	l.mu.Lock()
	close(l.done)
	for _, up := range l.ups {
		up.Close()
	}
	l.mu.Unlock()
	l.conn.Close()
	l.wg.Wait()
}
