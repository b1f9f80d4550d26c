package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
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
	conns, err := dialAll(o)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
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
	var measuring atomic.Bool
	var count atomic.Uint64
	hists := make([]hist, len(conns))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, c := range conns {
		hists[i] = newHist()
		wg.Add(1)
		go func() {
			defer wg.Done()
			echoLoop(ctx, c, o.inflight, o.size, &measuring, &count, hists[i])
		}()
	}
	var c0 time.Time
	var m0 uint64
	for in.Scan() {
		switch in.Text() {
		case "measure":
			c0, m0 = time.Now(), count.Load()
			measuring.Store(true)
		case "done":
			measuring.Store(false)
			res.Messages, res.Seconds = count.Load()-m0, time.Since(c0).Seconds()
		}
		if in.Text() == "done" {
			break
		}
	}
	cancel()
	wg.Wait()
	for i, c := range conns {
		st := c.Stats()
		res.Retransmissions += st.Retransmissions
		res.InboxDrops += st.InboxDrops
		res.Dropped += st.PacketsDropped
		res.Datagrams += st.PacketsSent
		res.Sent += st.MessagesSent
		res.RTT.merge(hists[i])
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return nil
}

// dialAll connects this process's clients, 32 at a time.
func dialAll(o clientOpts) ([]*netstack.Client, error) {
	reg := wire.NewRegistry()
	if err := reg.Register("echo", echoSchema()); err != nil {
		return nil, err
	}
	server := netip.MustParseAddrPort(o.addr)
	conns := make([]*netstack.Client, o.clients)
	var wg sync.WaitGroup
	var first atomic.Value
	sem := make(chan struct{}, 32)
	for k := range conns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			i := o.first + k
			src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 2, byte(i / 250), byte(i%250 + 1)}), 0)
			conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(src))
			if err != nil {
				first.CompareAndSwap(nil, err)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: server, Name: fmt.Sprintf("many-%d", i), Pin: o.pin,
				Conn: conn, Registry: reg, InboxSize: 4 * o.inflight, ServiceInterval: o.serviceInterval})
			if err != nil {
				conn.Close()
				first.CompareAndSwap(nil, err)
				return
			}
			conns[k] = c
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return conns, err
	}
	return conns, nil
}

// echoLoop keeps inflight messages in flight on c until ctx ends: each
// carries its send time; every echo is replaced by a new message. As a game
// client answers once per frame, it takes every echo that has arrived, sends
// as many new messages and flushes once, so that they share datagrams. The
// round trips (µs) of the echoes received while measuring go to h.
func echoLoop(ctx context.Context, c *netstack.Client, inflight, size int, measuring *atomic.Bool, count *atomic.Uint64, h hist) {
	payload := make([]byte, size)
	send := func(now int64) bool {
		binary.LittleEndian.PutUint64(payload, uint64(now))
		return c.Send(echoType, wire.Reliable, payload) == nil
	}
	now := time.Now().UnixNano()
	for range inflight {
		if !send(now) {
			return
		}
	}
	c.Flush()
	polled, stop := context.WithCancel(ctx)
	stop() // Receive with it takes only what has arrived
	for {
		m, err := c.Receive(ctx)
		for err == nil {
			if m.Header.Type == echoType && len(m.Payload) >= 8 {
				now = time.Now().UnixNano()
				if measuring.Load() {
					h.add((now - int64(binary.LittleEndian.Uint64(m.Payload))) / 1000)
					count.Add(1)
				}
				if !send(now) {
					return
				}
			}
			m, err = c.Receive(polled)
		}
		if ctx.Err() != nil || !errors.Is(err, context.Canceled) {
			return
		}
		c.Flush()
	}
}
