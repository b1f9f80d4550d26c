package host_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/internal/cpupin"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// BenchmarkIdleSessions is the capacity benchmark of docs/performance.md:
// how many admitted, sealed v4 sessions that only exchange heartbeats one
// server process holds on one core, what each costs in memory, whether the
// tick stays at 60 Hz, and how long 1,000 players arriving at once take to
// be admitted at that load.
//
// The server runs in the benchmark's process, pinned to CPU 0 with one P
// (GOMAXPROCS=1); its clients run in child processes (this test binary
// running TestIdleClients), pinned to the last CPU, at most idlePerChild
// sessions each (one UDP socket per session, each from its own loopback
// address 127.c.x.y, so that per-source budgets see many sources). The
// server is the defaults with a lobby (rooms enabled: the clients stay in
// no room), max_clients raised to fit, the per-source and per-prefix
// connect budgets and half-open caps lifted (every client is on one
// machine, 250 to a /24); the
// handshake budget is the default (1,000 signatures a second) unless
// SPARK_IDLE_HANDSHAKES sets it.
//
//	SPARK_IDLE_SESSIONS=20000 go test -run XXX -bench IdleSessions -benchtime 1x -timeout 20m ./host/
//	SPARK_IDLE_HEAPPROFILE=/tmp/idle.heap ...   # the server's heap profile at load
//	SPARK_IDLE_CPUPROFILE=/tmp/idle.cpu ...     # its CPU profile over the idle window
//	SPARK_IDLE_BURSTPROFILE=/tmp/burst.cpu ...  # and over the burst of arrivals
//	SPARK_IDLE_HOLDERS_NICE=0 ...               # the idle sessions' processes not at nice 10
func BenchmarkIdleSessions(b *testing.B) {
	if os.Getenv(idleChildEnv) != "" {
		b.Skip("the clients' processes run TestIdleClients")
	}
	n := envInt("SPARK_IDLE_SESSIONS", 2000)
	burst := envInt("SPARK_IDLE_BURST", 1000)
	hsRate := envInt("SPARK_IDLE_HANDSHAKES", 0)     // 0: the default budget
	memLimit := envInt("SPARK_IDLE_MEMLIMIT_MIB", 0) // server.memory_limit_mib; 0: none
	if os.Getenv("SPARK_IDLE_MEMLIMIT_MIB") == "auto" {
		memLimit = config.MemoryLimitAuto
	}
	if os.Getenv("SPARK_IDLE_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 256 // every session's allocations show
	}
	split := runtime.NumCPU() >= 2
	if split {
		cpupin.ProcessOrLog(b, 0)
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	}
	srv, _ := startHostIn(b, "testdata", func(c *config.Config) {
		// A lobby: an admitted client waits outside any room, so that
		// nothing but heartbeats crosses its session. (In the single
		// match every admission is a scoreboard row broadcast to all.)
		c.Rooms.Enabled, c.Rooms.Modes = true, []string{"echo2"}
		c.Server.MaxClients = n + burst + 16
		c.Network.ConnectBurst, c.Network.ConnectRefillPerSecond = 10000, 10000
		c.Network.PrefixBurst, c.Network.PrefixRefillPerSecond = 10000, 10000
		c.Network.HalfOpenMax = max(c.Network.HalfOpenMax, burst+64)
		c.Network.HalfOpenPerAddress, c.Network.HalfOpenPerPrefix = 1024, 4096
		c.Server.MemoryLimitMiB = memLimit
		if hsRate > 0 {
			c.Network.HandshakesPerSecond = float64(hsRate)
			c.Network.UnvalidatedRepliesPerSecond = float64(2 * hsRate)
		}
	})
	runtime.GC()
	rss0, heap0 := rssBytes(), heapInuse()
	cpu := runtime.NumCPU() - 1
	kids := startIdleChildren(b, srv, n, cpu)
	// The burst's clients: processes of their own, with no idle sessions.
	var arrivals []*idleChild
	for i := range burstChildren {
		arrivals = append(arrivals, startIdleChild(b, srv, 0, len(kids)+i, cpu))
	}
	t0 := time.Now()
	retried := 0
	for _, k := range arrivals {
		k.await(b, "ready")
	}
	for _, k := range kids {
		var r int
		fmt.Sscanf(k.await(b, "ready"), "ready %d", &r)
		retried += r
	}
	fill := time.Since(t0)
	waitPlayers(b, srv, n)
	b.Logf("%d sessions connected in %.1f s (%.0f admissions/s; %d connects tried again)", n, fill.Seconds(), float64(n)/fill.Seconds(), retried)
	time.Sleep(3 * time.Second) // every session past its first heartbeats
	b.ResetTimer()
	gc0 := gcCycles()
	idle := measureIdle(b, srv, 10*time.Second)
	idleGCs := gcCycles() - gc0
	runtime.GC()
	rss1, heap1 := rssBytes(), heapInuse()
	classes1 := memoryClasses()
	if path := os.Getenv("SPARK_IDLE_HEAPPROFILE"); path != "" {
		writeHeapProfile(b, path)
	}
	debug.FreeOSMemory() // what the sessions hold, without the garbage of the fill
	rss2 := rssBytes()
	b.StopTimer()
	b.ReportMetric(float64(n), "sessions")
	b.ReportMetric(float64(rss1)/float64(n), "RSS-B/session")
	b.ReportMetric(float64(rss1-rss0)/float64(n), "RSS-added-B/session")
	b.ReportMetric(float64(rss2-rss0)/float64(n), "RSS-added-freed-B/session")
	b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-B/session")
	b.ReportMetric(idle.avg, "tick-avg-ms")
	b.ReportMetric(idle.peak, "tick-peak-ms")
	b.ReportMetric(idle.rate, "ticks/s")
	b.ReportMetric(idle.lowRate, "lowest-ticks/s")
	b.ReportMetric(idle.cpu*100, "server-CPU-%")
	b.ReportMetric(idle.retx, "retx/s")
	b.ReportMetric(float64(idleGCs)/10, "idle-GCs/s")
	b.ReportMetric(100*idle.core0, "core0-busy-%")
	b.ReportMetric(100*idle.clientsCore, "clients-core-busy-%")
	b.Logf("server RSS %.1f MiB (%.1f before the sessions; %.1f once free memory is returned), heap in use %.1f MiB (%.1f before)",
		mib(rss1), mib(rss0), mib(rss2), mib(heap1), mib(heap0))
	b.Logf("at load: %s", classes1)
	if burst > 0 {
		admitBurst(b, srv, arrivals, n, burst)
	}
}

// idleChildEnv carries, to a clients' process, "ADDR PIN N CHILD CPU".
const idleChildEnv = "SPARK_IDLE_CLIENTS"

// idlePerChild is the most sessions one clients' process holds: one socket
// each, under a file limit of 20,000.
const idlePerChild = 8000

// idleServiceInterval is how often a filling client runs its timers: its
// heartbeat is once a second, and at 10 ms twenty thousand clients would
// spend the clients' core waking up.
const idleServiceInterval = 250 * time.Millisecond

type idleChild struct {
	stdin io.Writer
	lines chan string
}

func startIdleChildren(b *testing.B, srv *host.Server, n, cpu int) []*idleChild {
	var kids []*idleChild
	for i := 0; n > 0; i++ {
		m := min(n, idlePerChild)
		n -= m
		kids = append(kids, startIdleChild(b, srv, m, i, cpu))
	}
	return kids
}

// startIdleChild starts the clients' process number child, which connects
// m idle sessions and then waits for bursts to dial.
func startIdleChild(b *testing.B, srv *host.Server, m, child, cpu int) *idleChild {
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleClients$", "-test.v")
	if nice, err := exec.LookPath("nice"); err == nil && m > 0 && os.Getenv("SPARK_IDLE_HOLDERS_NICE") != "0" {
		// The processes that hold the idle sessions yield the clients'
		// core to the burst's: a restart's arrivals come from machines
		// of their own, not from behind 20,000 other clients' heartbeats.
		// The server's core is not affected.
		cmd = exec.Command(nice, "-n", "10", os.Args[0], "-test.run=^TestIdleClients$", "-test.v")
	}
	// Four Ps on the clients' one core: with one, thousands of
	// clients' network wake-ups queue behind each other (bench/many).
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %d %d", idleChildEnv, srv.Addr(), srv.Pin(), m, child, cpu), "GOMAXPROCS=4")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	k := &idleChild{stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(k.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "idle: "); ok {
				k.lines <- line
			}
		}
	}()
	return k
}

// await returns the child's next line, which must start with want.
func (k *idleChild) await(b *testing.B, want string) string {
	select {
	case line, ok := <-k.lines:
		if !ok {
			b.Fatal("a clients' process ended early")
		}
		if !strings.HasPrefix(line, want) {
			b.Fatalf("clients' process: %s", line)
		}
		return line
	case <-time.After(10 * time.Minute):
		b.Fatalf("no %q from a clients' process in 10 minutes", want)
	}
	return ""
}

func waitPlayers(b *testing.B, srv *host.Server, n int) {
	deadline := time.Now().Add(time.Minute)
	for srv.Stats().Players < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d players after a minute, want %d (the transport holds %d sessions and %d half-open)",
				srv.Stats().Players, n, srv.Net().SlotCount()-srv.Net().HalfOpenCount(), srv.Net().HalfOpenCount())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type idleFigures struct {
	avg, peak, rate, lowRate, cpu, retx float64
	core0, clientsCore                  float64 // how busy the server's core and the clients' were, anyone's work
}

// measureIdle samples the tick over d: the average, the highest
// per-second peak, the rate and its lowest per-second value, and the
// server process's CPU time per second of wall time.
func measureIdle(b *testing.B, srv *host.Server, d time.Duration) idleFigures {
	if path := os.Getenv("SPARK_IDLE_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	before, t0, cpu0, cores0 := srv.Stats(), time.Now(), cpuTime(), coreTimes()
	f := idleFigures{lowRate: 1e9}
	for time.Since(t0) < d {
		time.Sleep(250 * time.Millisecond)
		st := srv.Stats()
		f.peak = max(f.peak, st.RecentPeakTickMS)
		if time.Since(t0) > 1100*time.Millisecond {
			f.lowRate = min(f.lowRate, st.CurrentTickRate)
		}
	}
	after, elapsed := srv.Stats(), time.Since(t0).Seconds()
	ticks := after.Ticks - before.Ticks
	f.avg = (after.AvgTickMS*float64(after.Ticks) - before.AvgTickMS*float64(before.Ticks)) / float64(ticks)
	f.rate = float64(ticks) / elapsed
	f.cpu = (cpuTime() - cpu0).Seconds() / elapsed
	busy := coresBusy(cores0, coreTimes())
	f.core0, f.clientsCore = busy[0], busy[len(busy)-1]
	f.retx = float64(after.Net.Retransmissions-before.Net.Retransmissions) / elapsed
	if after.Players < before.Players {
		b.Errorf("players fell from %d to %d while idle", before.Players, after.Players)
	}
	return f
}

// burstChildren is how many clients' processes share the burst's dials.
const burstChildren = 2

// burstServiceInterval is the timers' interval of a burst's client once
// admitted: a real player's is 10 ms on a machine of its own, and here a
// thousand share the clients' core with the idle ones.
const burstServiceInterval = 50 * time.Millisecond

// admitBurst has burst more players arrive at once (each its own client,
// dialled by the burst's processes at the same instant) while n are
// connected, and reports how long the last one waited for its admission,
// the tick meanwhile, and how busy each core was.
func admitBurst(b *testing.B, srv *host.Server, kids []*idleChild, n, burst int) {
	if path := os.Getenv("SPARK_IDLE_BURSTPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	before, cpu0, cores0 := srv.Stats(), cpuTime(), coreTimes()
	for i, k := range kids {
		fmt.Fprintf(k.stdin, "burst %d\n", burst/len(kids)+min(1, max(0, burst%len(kids)-i)))
	}
	var secs float64
	var failed int
	for _, k := range kids {
		line := k.await(b, "burst")
		var s float64
		var f int
		if _, err := fmt.Sscanf(line, "burst %f %d", &s, &f); err != nil {
			b.Fatalf("clients' process: %q: %v", line, err)
		}
		secs, failed = max(secs, s), failed+f
	}
	after, cpu := srv.Stats(), cpuTime()-cpu0
	busy := coresBusy(cores0, coreTimes())
	b.ReportMetric(100*busy[0], "burst-core0-busy-%")
	b.ReportMetric(100*busy[len(busy)-1], "burst-clients-core-busy-%")
	b.ReportMetric(secs, "burst-admit-s")
	b.ReportMetric(cpu.Seconds(), "burst-server-CPU-s")
	b.ReportMetric(float64(failed), "burst-failed")
	b.ReportMetric(after.PeakTickMS, "run-peak-tick-ms")
	b.Logf("%d players arriving at once with %d connected: all admitted %.2f s after the first dial, %d failed; players %d → %d; handshakes signed %d, refused by the budget %d",
		burst, n, secs, failed, before.Players, after.Players, after.Net.HandshakesSigned-before.Net.HandshakesSigned, after.Net.HandshakeBudgetRefused-before.Net.HandshakeBudgetRefused)
}

// TestIdleClients is a clients' process of BenchmarkIdleSessions; it does
// nothing in a normal test run.
func TestIdleClients(t *testing.T) {
	spec := os.Getenv(idleChildEnv)
	if spec == "" {
		t.Skip("run by BenchmarkIdleSessions")
	}
	var addrText, pin string
	var n, child, cpu int
	if _, err := fmt.Sscan(spec, &addrText, &pin, &n, &child, &cpu); err != nil {
		t.Fatal(err)
	}
	cpupin.ProcessOrLog(t, cpu)
	raiseFileLimit(t)
	addr := netip.MustParseAddrPort(addrText)
	sw := &swarm{server: addr, pin: pin, child: child}
	if err := sw.dialAll(0, n, 64, idleServiceInterval); err != nil {
		fmt.Printf("idle: error %v\n", err)
		return
	}
	fmt.Printf("idle: ready %d\n", sw.retried.Load())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var m int
		if _, err := fmt.Sscanf(sc.Text(), "burst %d", &m); err != nil {
			continue
		}
		t0 := time.Now()
		err := sw.dialAll(n, m, m, burstServiceInterval)
		failed := int(sw.failed.Load())
		if err != nil && failed == 0 {
			failed = 1
		}
		fmt.Printf("idle: burst %.3f %d\n", time.Since(t0).Seconds(), failed)
	}
	sw.closeAll()
}

// swarm is one process's idle clients: real netstack clients, each on its
// own UDP socket bound to its own loopback address.
type swarm struct {
	server  netip.AddrPort
	pin     string
	child   int
	mu      sync.Mutex
	conns   []*netstack.Client
	failed  atomic.Int64
	retried atomic.Int64 // failed dials of the fill tried again
}

// fillTries is how often a filling client tries to connect; the burst's
// clients try once.
const fillTries = 3

// source is the loopback address of the child's i-th client:
// 127.(child+1).(i/250).(i%250+1).
func (sw *swarm) source(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, byte(sw.child + 1), byte(i / 250), byte(i%250 + 1)}), 0)
}

// dialAll connects clients from..from+n, at most par at a time, and
// returns the first error.
func (sw *swarm) dialAll(from, n, par int, service time.Duration) error {
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	var first atomic.Value
	sw.failed.Store(0)
	for i := from; i < from+n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := sw.dial(i, service)
			for try := 1; err != nil && service > 0 && try < fillTries; try++ {
				sw.retried.Add(1) // a player whose connect failed tries again
				err = sw.dial(i, service)
			}
			if err != nil {
				sw.failed.Add(1)
				first.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return fmt.Errorf("%d of %d dials failed, the first: %w", sw.failed.Load(), n, err)
	}
	return nil
}

func (sw *swarm) dial(i int, service time.Duration) error {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(sw.source(i)))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := netstack.Dial(ctx, netstack.ClientConfig{
		Server: sw.server, Name: fmt.Sprintf("idle-%d-%d", sw.child, i), Pin: sw.pin, Conn: conn,
		Registry: gamemsg.NewRegistry(), Welcome: gamemsg.TypeGameStateSync,
		InboxSize: 16, ServiceInterval: service,
	})
	if err != nil {
		conn.Close()
		return err
	}
	sw.mu.Lock()
	sw.conns = append(sw.conns, c)
	sw.mu.Unlock()
	return nil
}

func (sw *swarm) closeAll() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for _, c := range sw.conns {
		c.Close()
	}
}

// raiseFileLimit lifts the soft limit on open files to the hard one: a
// clients' process holds one socket per session.
func raiseFileLimit(tb testing.TB) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err == nil && l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			tb.Logf("open files limit stays %d: %v", l.Cur, err)
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// rssBytes is this process's resident memory (VmRSS).
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func heapInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Logf("heap profile: %v", err)
		return
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Logf("heap profile: %v", err)
	}
}

func mib(v uint64) float64 { return float64(v) / (1 << 20) }

// gcCycles is how many collections the process has completed.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// memoryClasses tells where the Go runtime's memory is (runtime/metrics'
// /memory/classes, MiB), the goroutines and the memory limit in force.
func memoryClasses() string {
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") || d.Name == "/sched/goroutines:goroutines" || d.Name == "/gc/gomemlimit:bytes" || d.Name == "/gc/heap/live:bytes" || d.Name == "/gc/cycles/total:gc-cycles" {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	var sb strings.Builder
	for _, sm := range samples {
		if sm.Value.Kind() != metrics.KindUint64 {
			continue
		}
		v, name := sm.Value.Uint64(), strings.TrimPrefix(sm.Name, "/memory/classes/")
		if strings.HasSuffix(name, ":bytes") {
			fmt.Fprintf(&sb, "%s %.1f MiB; ", strings.TrimSuffix(name, ":bytes"), mib(v))
		} else {
			fmt.Fprintf(&sb, "%s %d; ", name, v)
		}
	}
	return sb.String()
}

// coreTimes reads each CPU's busy and total jiffies from /proc/stat (nil
// where it cannot be read).
func coreTimes() [][2]uint64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	var out [][2]uint64
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		var busy, total uint64
		for i, v := range f[1:] {
			n, _ := strconv.ParseUint(v, 10, 64)
			total += n
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
		out = append(out, [2]uint64{busy, total})
	}
	return out
}

// coresBusy is each CPU's busy fraction between two coreTimes readings
// (zeros when they cannot be compared).
func coresBusy(a, b [][2]uint64) []float64 {
	out := make([]float64, max(len(b), 1))
	if len(a) != len(b) {
		return out
	}
	for i := range b {
		if dt := b[i][1] - a[i][1]; dt > 0 {
			out[i] = float64(b[i][0]-a[i][0]) / float64(dt)
		}
	}
	return out
}
