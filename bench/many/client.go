package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// result is one client process's report.
type result struct {
	Messages uint64  // echoes received in the measured window
	Seconds  float64 // the window, as this process saw it
	RTT      hist
	Dial     float64 // seconds to connect this process's clients
	// The clients' totals: retransmissions, messages dropped from a full
	// inbox, datagrams dropped, datagrams and messages sent.
	Retransmissions, InboxDrops, Dropped, Datagrams, Sent uint64
	// Unreliable messages given up for lost in the window (no echo within
	// -loss-after), and echoes that came back after that.
	Lost, Late uint64
	// The shared sockets' system calls over the whole run: datagrams sent
	// in sendmmsg calls, received in recvmmsg calls, and received
	// datagrams that no client took.
	SockSent, SockSendCalls, SockRecv, SockRecvCalls, SockDropped uint64
}

// client runs one client process: it dials its clients, says "dialed",
// and after "go" on stdin keeps every client's messages in flight; it
// counts the echoes between "measure" and "done", then reports (JSON).
func client(o clientOpts) error {
	stop := profile("client-" + strconv.Itoa(o.first))
	defer stop()
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
	t0 := time.Now()
	conns, views, sock, err := dialAll(o)
	defer func() {
		// In parallel: a client's Close waits for its last Acks, which
		// the engine (when it runs) reads for all of them.
		var closing sync.WaitGroup
		for _, c := range conns {
			if c != nil {
				closing.Go(func() { c.Close() })
			}
		}
		closing.Wait()
		if sock != nil {
			sock.Close()
		}
	}()
	if err != nil {
		return err
	}
	fmt.Println("dialed")
	res := result{Dial: time.Since(t0).Seconds(), RTT: newHist()}
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		return fmt.Errorf("no go")
	}
	var m meter
	loops := make([]*loop, len(conns))
	ctx, cancel := context.WithCancel(context.Background())
	wake := func() context.Context { return ctx }
	if o.channel == wire.Unreliable {
		wake = ticker(ctx, o.lossAfter/5)
	}
	var wg sync.WaitGroup
	var eng *engine
	for i, c := range conns {
		loops[i] = newLoop(c, o, &m)
		if o.engine == "pump" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			loops[i].run(ctx, wake)
		}()
	}
	if o.engine == "pump" {
		eng = newEngine(sock, conns, loops, views, o)
		sock.start(eng)
	}
	var c0 time.Time
	var m0 uint64
	for in.Scan() {
		switch in.Text() {
		case "measure":
			c0, m0 = time.Now(), m.count.Load()
			m.measuring.Store(true)
		case "done":
			m.measuring.Store(false)
			res.Messages, res.Seconds = m.count.Load()-m0, time.Since(c0).Seconds()
		}
		if in.Text() == "done" {
			break
		}
	}
	cancel()
	wg.Wait()
	if eng != nil {
		eng.stop()
	}
	for i, c := range conns {
		st := c.Stats()
		res.Retransmissions += st.Retransmissions
		res.InboxDrops += st.InboxDrops
		res.Dropped += st.PacketsDropped
		res.Datagrams += st.PacketsSent
		res.Sent += st.MessagesSent
		res.RTT.merge(loops[i].h)
		res.Lost += loops[i].lost
		res.Late += loops[i].late
	}
	if sock != nil {
		res.SockSent, res.SockSendCalls = sock.Datagrams.Load(), sock.Calls.Load()
		res.SockRecv, res.SockRecvCalls = sock.RecvDatagrams.Load(), sock.RecvCalls.Load()
		res.SockDropped = sock.Dropped.Load()
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return nil
}

// dialAll connects this process's clients, 32 at a time: each on its own
// socket, or all on one shared socket (returned, for its counters).
func dialAll(o clientOpts) ([]*netstack.Client, []*view, *sharedSocket, error) {
	reg := wire.NewRegistry()
	if err := reg.Register("echo", echoSchema(o.channel)); err != nil {
		return nil, nil, nil, err
	}
	server := netip.MustParseAddrPort(o.addr)
	var sock *sharedSocket
	if o.socket == "shared" {
		s, err := newSharedSocket(server)
		if err != nil {
			return nil, nil, nil, err
		}
		sock = s
	}
	conns := make([]*netstack.Client, o.clients)
	views := make([]*view, o.clients)
	var wg sync.WaitGroup
	var first atomic.Value
	sem := make(chan struct{}, 32)
	for k := range conns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			i := o.first + k
			cfg := netstack.ClientConfig{Server: server, Name: fmt.Sprintf("many-%d", i), Pin: o.pin, Registry: reg,
				InboxSize: 4 * o.inflight, ServiceInterval: o.serviceInterval, NoMigration: o.noMigration, Polled: o.engine == "pump"}
			src := netip.AddrFrom4([4]byte{127, 2, byte(i / 250), byte(i%250 + 1)})
			var conn *net.UDPConn
			var err error
			if sock != nil {
				views[k], err = sock.view(src)
				cfg.Transport = views[k]
			} else if conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0))); err == nil {
				cfg.Conn = conn
			}
			if err != nil {
				first.CompareAndSwap(nil, err)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := netstack.Dial(ctx, cfg)
			if err != nil {
				if conn != nil {
					conn.Close()
				}
				first.CompareAndSwap(nil, err)
				return
			}
			conns[k] = c
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return conns, views, sock, err
	}
	return conns, views, sock, nil
}
