package mmo_test

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/internal/cpupin"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/reliable"
)

// BenchmarkLoad1000 is the load test of docs/performance.md: 1,000
// headless sessions on loopback register, log in, create and enter a
// character and spread over the area (each walks away from the centre,
// where every character starts, as soon as it is in, for its own time of up
// to 4.5 s at 100 units a second, so that they cover a disc of radius 450
// about evenly and do not all meet at the centre), then all
// move at once (each in its own direction, turning every 2 s) for 10 s,
// while the server ticks at 60 Hz with the mmo plugin replicating positions
// at 10 Hz. Each character then sees the few dozen within its interest
// radius (100) rather than everyone. It reports the server's tick time
// (average over the moving phase, and the highest per-second peak of it),
// the peak since start (set-up included), and what the server sent per
// session per second.
//
//	go test -run XXX -bench Load1000 -benchtime 1x ./modules/mmo/
func BenchmarkLoad1000(b *testing.B) {
	if os.Getenv(loadChildEnv) != "" {
		b.Skip("the clients' process runs TestLoadClients")
	}
	n := loadSessions()
	const moving = 10 * time.Second
	split := runtime.NumCPU() >= 2 && os.Getenv("SPARK_MMO_SAME_CORES") == ""
	if split {
		// The server (and its plugin, which inherits this) on CPU 0, the
		// clients' process on the last CPU: the figure is the server's,
		// not that of 1,000 clients fighting it for the same cores.
		cpupin.ProcessOrLog(b, 0)
		// One core, one P: a Go process started on two cores keeps two
		// threads running goroutines, which the kernel then time-slices
		// on the one core, stalling the game thread a slice at a time.
		// (The plugin, started after the pin, sees one CPU by itself.)
		procs := 1
		if n, err := strconv.Atoi(os.Getenv("SPARK_MMO_PROCS")); err == nil && n > 0 {
			procs = n
		}
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	}
	srv := startServer(b, mmoDataDir(b, "speed = 100.0\n"), func(c *config.Config) {
		c.Server.MaxClients = n + 24
		// Every session comes from 127.0.0.1: lift the per-source connect budget.
		c.Network.ConnectBurst, c.Network.ConnectRefillPerSecond = 10000, 10000
		c.Network.PrefixBurst, c.Network.PrefixRefillPerSecond = 10000, 10000
		c.Network.HalfOpenPerAddress, c.Network.HalfOpenPerPrefix = 1024, 1024
		if f, err := strconv.ParseFloat(os.Getenv("SPARK_MMO_BUDGET"), 64); err == nil {
			c.Modules.TickBudgetFraction = f // how long a tick waits for the plugin's answer
		}
		if a := os.Getenv("SPARK_MMO_ANSWERS"); a != "" {
			c.Modules.PluginAnswers = a // same_tick or next_tick
		}
	})
	ctl := startLoadClients(b, srv, n, moving, split)
	<-ctl.ready
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	before, t0 := srv.Stats(), time.Now()
	b.ResetTimer()
	stop := t0.Add(moving)
	ctl.start()
	if path := os.Getenv("SPARK_MMO_PROFILE"); path != "" { // the moving phase's CPU profile
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer f.Close()
				defer pprof.StopCPUProfile()
			}
		}
	}
	if path := os.Getenv("SPARK_MMO_TRACE"); path != "" { // the moving phase's execution trace
		if f, err := os.Create(path); err == nil {
			if trace.Start(f) == nil {
				defer f.Close()
				defer trace.Stop()
			}
		}
	}
	var peak float64
	time.Sleep(1500 * time.Millisecond) // the first full second of moving
	for time.Now().Before(stop.Add(-time.Second)) {
		time.Sleep(250 * time.Millisecond)
		peak = max(peak, srv.Stats().RecentPeakTickMS)
	}
	<-ctl.done
	b.StopTimer()
	after, elapsed := srv.Stats(), time.Since(t0).Seconds()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/elapsed/(1<<20), "server-alloc-MiB/s")
	b.ReportMetric(float64(ms1.NumGC-ms0.NumGC), "server-GCs")
	ticks := after.Ticks - before.Ticks
	avg := (after.AvgTickMS*float64(after.Ticks) - before.AvgTickMS*float64(before.Ticks)) / float64(ticks)
	in, _ := srv.Exec("mmo_online")
	b.ReportMetric(avg, "tick-avg-ms")
	b.ReportMetric(peak, "tick-peak-ms")
	b.ReportMetric(after.PeakTickMS, "setup-peak-ms")
	b.ReportMetric(float64(ticks)/elapsed, "ticks/s")
	b.ReportMetric(float64(after.BytesOut-before.BytesOut)/float64(n)/elapsed, "out-B/session/s")
	if d := after.Net.PacketsSent - before.Net.PacketsSent; d > 0 {
		b.ReportMetric(float64(after.Net.MessagesSent-before.Net.MessagesSent)/float64(d), "msgs/datagram")
	}
	b.ReportMetric(float64(after.Net.Retransmissions-before.Net.Retransmissions)/elapsed, "retx/s")
	b.ReportMetric(float64(after.Net.PacketsSent-before.Net.PacketsSent)/float64(n)/elapsed, "sent-datagrams/session/s")
	b.ReportMetric(float64(after.Net.PacketsReceived-before.Net.PacketsReceived)/float64(n)/elapsed, "recv-datagrams/session/s")
	b.ReportMetric(float64(after.Net.MessagesSent-before.Net.MessagesSent)/float64(n)/elapsed, "msgs/session/s")
	b.Logf("%s; %d ticks in %.1f s; clients on their own core: %v", firstLine(in), ticks, elapsed, split)
	if info, err := srv.Exec("module info mmo"); err == nil {
		b.Logf("module info mmo:\n%s", info)
	}
}

// loadChildEnv carries, to the clients' process, "ADDR PIN N MOVING CPU".
const loadChildEnv = "SPARK_MMO_LOAD_CLIENTS"

// loadControl drives the clients wherever they run: ready once every
// character is in and has walked to its place, start to move, done when
// the moving phase is over.
type loadControl struct {
	ready, done chan struct{}
	start       func()
}

// startLoadClients runs the n clients in this process or, with split, in a
// child process (this test binary running TestLoadClients) pinned to the
// last CPU, talking over its stdin and stdout.
func startLoadClients(b *testing.B, srv *server, n int, moving time.Duration, split bool) *loadControl {
	ctl := &loadControl{ready: make(chan struct{}), done: make(chan struct{})}
	if !split {
		goCh := make(chan struct{})
		ctl.start = func() { close(goCh) }
		go func() {
			defer close(ctl.done)
			runLoadClients(b, srv.Addr(), srv.Pin(), n, moving, func() { close(ctl.ready) }, goCh)
		}()
		return ctl
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadClients$", "-test.v")
	// The child is told its CPU: started from this process, pinned to
	// CPU 0, its runtime.NumCPU would be 1.
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %s %d", loadChildEnv, srv.Addr(), srv.Pin(), n, moving, runtime.NumCPU()-1))
	if p := os.Getenv("SPARK_MMO_CLIENT_PROCS"); p != "" {
		// The clients' Ps on their one core: with one P and a few
		// thousand clients, their network wake-ups queue behind each
		// other (bench/many measured 8.8k against 50k msgs/s at 1 and 4).
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+p)
	}
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
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ctl.start = func() { fmt.Fprintln(stdin, "go") }
	go func() {
		defer close(ctl.done)
		sc := bufio.NewScanner(stdout)
		readyClosed := false
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == "load: ready" && !readyClosed:
				readyClosed = true
				close(ctl.ready)
			case line == "load: done":
				return
			case strings.HasPrefix(line, "load: error"), strings.HasPrefix(line, "--- FAIL"):
				b.Error(line)
			case strings.Contains(line, "_test.go:"): // the clients' own failures, as they happen
				fmt.Fprintln(os.Stderr, "clients:", line)
			}
		}
		if !readyClosed {
			b.Error("the clients' process ended before they were ready")
			close(ctl.ready)
		}
	}()
	return ctl
}

// TestLoadClients is the clients' process of BenchmarkLoad1000; it does
// nothing in a normal test run.
func TestLoadClients(t *testing.T) {
	spec := os.Getenv(loadChildEnv)
	if spec == "" {
		t.Skip("run by BenchmarkLoad1000")
	}
	var addr, pinText, movingText string
	var n, cpu int
	if _, err := fmt.Sscan(spec, &addr, &pinText, &n, &movingText, &cpu); err != nil {
		t.Fatal(err)
	}
	moving, err := time.ParseDuration(movingText)
	if err != nil {
		t.Fatal(err)
	}
	cpupin.ProcessOrLog(t, cpu)
	goCh := make(chan struct{})
	profiling := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "go" {
				profiling <- startClientProfile()
				close(goCh)
				return
			}
		}
	}()
	runLoadClients(t, netip.MustParseAddrPort(addr), pinText, n, moving, func() { fmt.Println("load: ready") }, goCh)
	if <-profiling {
		pprof.StopCPUProfile()
	}
	fmt.Println("load: done")
}

// startClientProfile starts the clients' process's CPU profile of the
// moving phase into SPARK_MMO_CLIENT_PROFILE, when set; it reports
// whether one runs.
func startClientProfile() bool {
	path := os.Getenv("SPARK_MMO_CLIENT_PROFILE")
	if path == "" {
		return false
	}
	f, err := os.Create(path)
	if err != nil {
		return false
	}
	return pprof.StartCPUProfile(f) == nil
}

// runLoadClients: n sessions register, log in, create and enter a
// character and spread over the area; ready is called then; at go they all
// move for moving.
func runLoadClients(tb testing.TB, addr netip.AddrPort, pinText string, n int, moving time.Duration, ready func(), goCh <-chan struct{}) {
	players := make([]*player, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	dials := make(chan int, n)
	for i := range players {
		dials <- i
	}
	close(dials)
	for range 4 { // dial in parallel, a few at a time
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range dials {
				players[i] = dialQuiet(tb, netstack.ClientConfig{Server: addr, Name: fmt.Sprintf("p%d", i), Pin: pinText,
					ServiceInterval: loadServiceInterval(), Reliable: loadReliable()})
			}
		}()
	}
	wg.Wait()
	work := make(chan int, n)
	for i := range players {
		work <- i
	}
	close(work)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p := players[i]
				acct, ch := fmt.Sprintf("load%d", i), fmt.Sprintf("Char%c%c%c", 'a'+i/676, 'a'+i/26%26, 'a'+i%26)
				if _, err := p.s.Register(bg, acct, "pw-"+acct); err != nil {
					reason, detail := p.c.CloseReason()
					errs <- fmt.Errorf("%s register: %w (%v: %s) client %+v", acct, err, reason, detail, p.c.Stats())
					return
				}
				if _, err := p.s.Login(bg, acct, "pw-"+acct); err != nil {
					errs <- fmt.Errorf("%s login: %w", acct, err)
					return
				}
				if err := p.s.Create(bg, ch); err != nil {
					errs <- fmt.Errorf("%s create: %w", acct, err)
					return
				}
				if _, err := p.s.Enter(bg, ch); err != nil {
					errs <- fmt.Errorf("%s enter: %w", acct, err)
					continue
				}
				// Walk away from the centre at once, so that the
				// characters entering later do not all meet there.
				r := rand.New(rand.NewPCG(uint64(i), 3))
				a := r.Float64() * 2 * math.Pi
				if err := p.s.Move(bg, float32(math.Cos(a)), float32(math.Sin(a))); err != nil {
					errs <- fmt.Errorf("%s move: %w", acct, err)
					continue
				}
				walk := time.Duration(4.5 * math.Sqrt(r.Float64()) * float64(time.Second))
				time.AfterFunc(walk, func() {
					if err := p.s.Stop(bg); err != nil {
						errs <- fmt.Errorf("%s stop: %w", acct, err)
					}
				})
			}
		}()
	}
	wg.Wait()
	time.Sleep(5 * time.Second) // every walk is over
	select {
	case err := <-errs:
		tb.Fatalf("%v", err)
	default:
	}
	ready()
	<-goCh
	stop := time.Now().Add(moving)
	for i, p := range players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 7))
			for time.Now().Before(stop) {
				a := r.Float64() * 2 * math.Pi
				if err := p.s.Move(bg, float32(math.Cos(a)), float32(math.Sin(a))); err != nil {
					tb.Error(err)
					return
				}
				time.Sleep(2 * time.Second)
			}
		}()
	}
	wg.Wait()
}

// mmoDataDir is a data directory whose mmo module reads config (the
// module's config.toml).
func mmoDataDir(b *testing.B, config string) string {
	dir := b.TempDir()
	mod := filepath.Join(dir, "modules", "mmo")
	if err := os.MkdirAll(mod, 0o700); err != nil {
		b.Fatal(err)
	}
	config = "max_registrations = 0\n" + config // every load client registers from 127.0.0.1
	if err := os.WriteFile(filepath.Join(mod, "config.toml"), []byte(config), 0o600); err != nil {
		b.Fatal(err)
	}
	return dir
}

func firstLine(s string) string {
	for i := range s {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// loadServiceInterval is how often each load client runs its timers:
// netstack's default (10 ms), or SPARK_MMO_CLIENT_SERVICE (a duration) so
// that a few thousand clients in one process do not spend their core
// waking up.
func loadServiceInterval() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("SPARK_MMO_CLIENT_SERVICE"))
	return d
}

// loadReliable is the load clients' reliability settings: each reliable
// arrival is acknowledged in the receive pass that took it (AckEvery 1),
// not by the service timer after AckDelay. A client on a machine of its
// own acknowledges within its 10 ms AckDelay; thousands in one process
// with a 30 ms service interval, on a core they share, would hold their
// Acks past the server's 50 ms minimum RTO, and the server would measure
// its own retransmissions of what arrived. SPARK_MMO_CLIENT_ACK=delayed
// keeps netstack's default (the rig before this setting).
func loadReliable() reliable.Config {
	if os.Getenv("SPARK_MMO_CLIENT_ACK") == "delayed" {
		return reliable.Config{}
	}
	return reliable.Config{AckEvery: 1}
}

// loadSessions is how many sessions BenchmarkLoad1000 runs: 1,000, or
// SPARK_MMO_SESSIONS.
func loadSessions() int {
	if v, err := strconv.Atoi(os.Getenv("SPARK_MMO_SESSIONS")); err == nil && v > 0 {
		return v
	}
	return 1000
}
