// Command many measures many clients with many reliable messages in flight
// through one sparkhost server core: each of -clients clients keeps
// -inflight messages of -size bytes in flight on the Reliable channel to an
// echo handler (every echo replaced by a new message), sealed as always.
// The server is one process with GOMAXPROCS=1 pinned to CPU 0, the clients
// one process pinned to CPU 1 (taskset), every client on its own UDP socket
// bound to its own loopback address 127.2.x.y.
//
//	cd bench && go run ./many                 # 1,000 clients × 10 in flight, 32 B
//	go run ./many -clients 200 -duration 3s   # a smaller run
//	go run ./many -profile /tmp/prof          # CPU profiles of both processes
//
// It prints messages echoed per second, p50/p99 round trip, and the server
// process's CPU time per message and its share of its core over the
// measured window.
package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// echoType is the message type of the echo.
const echoType wire.MessageType = 1000

var (
	profileDir  string
	clientCPUs  string
	clientProcs int
)

func main() {
	role := flag.String("role", "", "internal: server or client")
	addr := flag.String("addr", "", "internal: the server's address")
	pin := flag.String("pin", "", "internal: the server's pin")
	clients := flag.Int("clients", 1000, "clients")
	inflight := flag.Int("inflight", 10, "reliable messages in flight per client")
	size := flag.Int("size", 32, "message size in bytes (at least 12)")
	warmup := flag.Duration("warmup", 2*time.Second, "time before the measured window")
	duration := flag.Duration("duration", 5*time.Second, "the measured window")
	flag.StringVar(&profileDir, "profile", "", "write CPU profiles of both processes to this directory")
	flag.StringVar(&clientCPUs, "client-cpus", "1", "the CPUs of the clients' process (taskset list)")
	flag.IntVar(&clientProcs, "client-procs", 1, "GOMAXPROCS of the clients' process")
	flag.Parse()
	var err error
	switch *role {
	case "":
		err = orchestrate(*clients, *inflight, *size, *warmup, *duration)
	case "server":
		err = serve(*clients)
	case "client":
		err = client(*addr, *pin, *clients, *inflight, max(*size, 12), *warmup, *duration)
	default:
		err = fmt.Errorf("role %q", *role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "many:", err)
		os.Exit(1)
	}
}

// result is the clients' report.
type result struct {
	Messages     uint64
	Seconds      float64
	P50us, P99us float64
	Dial         float64 // seconds to connect every client
	// The clients' totals: retransmissions, messages dropped from a full
	// inbox, datagrams dropped.
	Retransmissions, InboxDrops, Dropped uint64
}

func orchestrate(clients, inflight, size int, warmup, dur time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	_, tsErr := exec.LookPath("taskset")
	pinned := tsErr == nil
	command := func(cpu string, procs int, args ...string) *exec.Cmd {
		var c *exec.Cmd
		if pinned {
			c = exec.Command("taskset", append([]string{"-c", cpu, self}, args...)...)
		} else {
			c = exec.Command(self, args...)
		}
		c.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", procs))
		c.Stderr = os.Stderr
		return c
	}
	prof := []string{}
	if profileDir != "" {
		prof = []string{"-profile", profileDir}
	}
	srv := command("0", 1, append([]string{"-role", "server", "-clients", strconv.Itoa(clients)}, prof...)...)
	srvIn, _ := srv.StdinPipe()
	srvOut, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		return err
	}
	defer srv.Wait()
	defer srvIn.Close()
	sc := bufio.NewScanner(srvOut)
	if !sc.Scan() {
		return fmt.Errorf("the server process said nothing")
	}
	var addr, pin string
	if _, err := fmt.Sscanf(sc.Text(), "ready %s %s", &addr, &pin); err != nil {
		return fmt.Errorf("server: %q", sc.Text())
	}
	cpuNow := func() (int64, uint64, uint64, uint64) {
		fmt.Fprintln(srvIn, "cpu")
		var ns int64
		var echoed, in, out uint64
		if sc.Scan() {
			fmt.Sscanf(sc.Text(), "cpu %d %d %d %d", &ns, &echoed, &in, &out)
		}
		return ns, echoed, in, out
	}
	cl := command(clientCPUs, clientProcs, append([]string{"-role", "client", "-addr", addr, "-pin", pin, "-clients", strconv.Itoa(clients),
		"-inflight", strconv.Itoa(inflight), "-size", strconv.Itoa(size), "-warmup", warmup.String(), "-duration", dur.String()}, prof...)...)
	clOut, _ := cl.StdoutPipe()
	if err := cl.Start(); err != nil {
		return err
	}
	fmt.Printf("%d clients × %d reliable messages of %d B in flight, sealed; server and clients one process each, GOMAXPROCS=1, taskset pinning %v\n",
		clients, inflight, size, pinned)
	var cpu0, cpu1 int64
	var e0, e1, in0, in1, out0, out1 uint64
	var t0, t1 time.Time
	var res result
	cs := bufio.NewScanner(clOut)
	for cs.Scan() {
		switch line := cs.Text(); {
		case line == "measure":
			t0 = time.Now()
			cpu0, e0, in0, out0 = cpuNow()
		case line == "done":
			t1 = time.Now()
			cpu1, e1, in1, out1 = cpuNow()
		case strings.HasPrefix(line, "{"):
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				return err
			}
		default:
			fmt.Println("client:", line)
		}
	}
	if err := cl.Wait(); err != nil {
		return fmt.Errorf("client process: %w", err)
	}
	if res.Messages == 0 || t1.IsZero() {
		return fmt.Errorf("no messages echoed")
	}
	cpu := float64(cpu1 - cpu0)
	echoed := float64(e1 - e0)
	fmt.Printf("connected %d clients in %.2f s; clients' retransmissions %d, inbox drops %d, datagrams dropped %d\n",
		clients, res.Dial, res.Retransmissions, res.InboxDrops, res.Dropped)
	fmt.Printf("msgs/s %.0f   p50 RTT %.0f µs   p99 RTT %.0f µs   server CPU %.0f ns/msg (%.0f%% of its core)\n",
		float64(res.Messages)/res.Seconds, res.P50us, res.P99us, cpu/echoed, 100*cpu/float64(t1.Sub(t0)))
	fmt.Printf("server datagrams: %.0f/s in (%.1f messages each), %.0f/s out (%.1f echoes each)\n",
		float64(in1-in0)/t1.Sub(t0).Seconds(), echoed/float64(in1-in0), float64(out1-out0)/t1.Sub(t0).Seconds(), echoed/float64(out1-out0))
	return nil
}

func echoSchema() wire.Schema {
	return wire.Schema{ID: echoType, Name: "Echo", Direction: wire.BothDirections, Channel: wire.Reliable,
		MinLen: 12, MaxLen: 1100, StringFieldOffset: wire.NoStringFields}
}

func serve(clients int) error {
	stop := profile("server")
	defer stop()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	reg := wire.NewRegistry()
	if err := reg.Register("echo", echoSchema()); err != nil {
		return err
	}
	lifted := ratelimit.Config{Burst: 10000, RefillPerSecond: 10000}
	srv, err := netstack.NewServer(netstack.ServerConfig{Bind: "127.0.0.1", Identity: priv, Registry: reg,
		Logger: slog.New(slog.DiscardHandler), MaxClients: clients + 16,
		// Every client is on this machine, 250 to a /24.
		ConnectBudget: lifted, PrefixBudget: lifted,
		HalfOpen: netstack.HalfOpenConfig{PerAddress: 1024, PerPrefix: 4096},
	})
	if err != nil {
		return err
	}
	var echoed atomic.Uint64
	srv.Handle(echoType, func(id uint32, _ *wire.Header, p []byte) {
		if srv.Send(id, echoType, wire.Reliable, p) == nil {
			echoed.Add(1)
		}
	})
	srv.Start()
	defer srv.Close()
	fmt.Printf("ready %s %s\n", srv.Addr(), srv.Pin())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		ctr := srv.Counters()
		fmt.Printf("cpu %d %d %d %d\n", ru.Utime.Nano()+ru.Stime.Nano(), echoed.Load(),
			ctr.PacketsReceived.Load(), ctr.PacketsSent.Load())
	}
	return nil
}

func client(addr, pin string, n, inflight, size int, warmup, dur time.Duration) error {
	stop := profile("client")
	defer stop()
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
	reg := wire.NewRegistry()
	if err := reg.Register("echo", echoSchema()); err != nil {
		return err
	}
	server := netip.MustParseAddrPort(addr)
	conns := make([]*netstack.Client, n)
	t0 := time.Now()
	var wg sync.WaitGroup
	var first atomic.Value
	sem := make(chan struct{}, 32)
	for i := range conns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 2, byte(i / 250), byte(i%250 + 1)}), 0)
			conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(src))
			if err != nil {
				first.CompareAndSwap(nil, err)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: server, Name: fmt.Sprintf("many-%d", i), Pin: pin,
				Conn: conn, Registry: reg, InboxSize: 4 * inflight})
			if err != nil {
				conn.Close()
				first.CompareAndSwap(nil, err)
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	dial := time.Since(t0).Seconds()
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var measuring atomic.Bool
	var count atomic.Uint64
	samples := make([][]int32, n)
	ctx, cancel := context.WithCancel(context.Background())
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			samples[i] = echoLoop(ctx, c, inflight, size, &measuring, &count)
		}()
	}
	time.Sleep(warmup)
	fmt.Println("measure")
	c0, m0 := time.Now(), count.Load()
	measuring.Store(true)
	time.Sleep(dur)
	measuring.Store(false)
	res := result{Messages: count.Load() - m0, Seconds: time.Since(c0).Seconds(), Dial: dial}
	fmt.Println("done")
	cancel()
	wg.Wait()
	for _, c := range conns {
		st := c.Stats()
		res.Retransmissions += st.Retransmissions
		res.InboxDrops += st.InboxDrops
		res.Dropped += st.PacketsDropped
	}
	var rtts []int32
	for _, s := range samples {
		rtts = append(rtts, s...)
	}
	slices.Sort(rtts)
	if k := len(rtts); k > 0 {
		res.P50us, res.P99us = float64(rtts[k/2]), float64(rtts[k*99/100])
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return nil
}

// echoLoop keeps inflight messages in flight on c until ctx ends: each
// carries its send time; every echo is replaced by a new message. As a game
// client answers once per frame, it takes every echo that has arrived, sends
// as many new messages and flushes once, so that they share datagrams. It
// returns the round trips (µs) of the echoes received while measuring.
func echoLoop(ctx context.Context, c *netstack.Client, inflight, size int, measuring *atomic.Bool, count *atomic.Uint64) []int32 {
	payload := make([]byte, size)
	send := func(now int64) bool {
		binary.LittleEndian.PutUint64(payload, uint64(now))
		return c.Send(echoType, wire.Reliable, payload) == nil
	}
	now := time.Now().UnixNano()
	for range inflight {
		if !send(now) {
			return nil
		}
	}
	c.Flush()
	polled, stop := context.WithCancel(ctx)
	stop() // Receive with it takes only what has arrived
	var rtts []int32
	for {
		m, err := c.Receive(ctx)
		for err == nil {
			if m.Header.Type == echoType && len(m.Payload) >= 8 {
				now = time.Now().UnixNano()
				if measuring.Load() {
					sent := int64(binary.LittleEndian.Uint64(m.Payload))
					rtts = append(rtts, int32((now-sent)/1000))
					count.Add(1)
				}
				if !send(now) {
					return rtts
				}
			}
			m, err = c.Receive(polled)
		}
		if ctx.Err() != nil || !errors.Is(err, context.Canceled) {
			return rtts
		}
		c.Flush()
	}
}

// profile starts a CPU profile of this process when -profile is set.
func profile(name string) func() {
	if profileDir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(profileDir, name+".pprof"))
	if err != nil || pprof.StartCPUProfile(f) != nil {
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
