package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/transport/web"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// BenchmarkSessions: many concurrent sessions over UDP, WebTransport and
// WebSocket on one real `sparkhost run` each (the echo Lua module, [web]
// on, GOMAXPROCS=1, pinned to CPU 0 with taskset), the clients in the
// benchmark's process. In each round the transports' servers run at once:
// their Go heap and RSS before and after the sessions connect, their CPU
// time and tick average over one idle window, and while the sessions send
// a fixed number of echo messages (reliable, 32 bytes, a steady rate) in
// turns — each transport's sessions send a share while the others' sit
// idle, the transports taking turns (SPARK_SESSION_TURNS, 4), so that the
// load of a shared machine weighs on all alike. A turn's window ends when
// every echo is back (or a second after the sending time); CPU per
// message is the server's /proc/PID/stat user+system time over its
// windows ÷ the echoes back within them. Pin the clients to the other
// core:
//
//	taskset -c 1 go test -run X -bench Sessions -benchtime 1x ./cmd/sparkhost/
//
// SPARK_SESSION_TRANSPORTS (udp,webtransport,websocket) picks some;
// SPARK_SESSIONS (200), SPARK_SESSION_MESSAGES (100 per session, at
// SPARK_SESSION_RATE 20 per second) and SPARK_SESSION_ROUNDS (2) change
// the load; SPARK_SESSION_PERF=DIR records `perf record` of each server
// during the idle window and each turn into DIR; SPARK_SESSION_SENDCALLS=1
// logs its send system calls and packets sent in each turn.
func BenchmarkSessions(b *testing.B) {
	n, msgs, rate, rounds := envInt("SPARK_SESSIONS", 200), envInt("SPARK_SESSION_MESSAGES", 100),
		envInt("SPARK_SESSION_RATE", 20), envInt("SPARK_SESSION_ROUNDS", 2)
	turns := envInt("SPARK_SESSION_TURNS", 4)
	bin := buildBinary(b)
	all := map[string][]loadResult{}
	var kinds []string
	for _, kind := range allTransports {
		if only := os.Getenv("SPARK_SESSION_TRANSPORTS"); only == "" || slices.Contains(strings.Split(only, ","), kind) {
			kinds = append(kinds, kind)
		}
	}
	for b.Loop() {
		for round := range rounds {
			for i, r := range runSessionRound(b, bin, kinds, n, msgs, rate, turns, round) {
				all[kinds[i]] = append(all[kinds[i]], r)
				behind := ""
				if r.echoedInWindow < int64(n*msgs)*99/100 {
					behind = " — BEHIND: fewer than 99% of the echoes came back within the windows (the server could not keep up, e.g. its CPU taken by other work); its CPU per message is not comparable"
				}
				b.Logf("round %d %-12s %s%s", round+1, kinds[i], r, behind)
			}
		}
	}
	for _, kind := range allTransports {
		rs := all[kind]
		if len(rs) == 0 {
			continue
		}
		b.Logf("%-12s heap/session %s B, RSS/session %s B, idle CPU %s ms/s, idle tick %s ms, load tick %s ms, CPU/msg %s µs, less idle %s µs; after the messages, collected and released: live heap/session %s B, RSS/session %s B",
			kind, span(rs, func(r loadResult) float64 { return r.heapPerSession }),
			span(rs, func(r loadResult) float64 { return r.rssPerSession }),
			span(rs, func(r loadResult) float64 { return r.idleCPUms }),
			span(rs, func(r loadResult) float64 { return r.idleTickMS }),
			span(rs, func(r loadResult) float64 { return r.loadTickMS }),
			span(rs, func(r loadResult) float64 { return r.cpuPerMsgUS }),
			span(rs, func(r loadResult) float64 { return r.netPerMsgUS }),
			span(rs, func(r loadResult) float64 { return r.livePerSession }),
			span(rs, func(r loadResult) float64 { return r.releasedPerSession }))
	}
	for _, kind := range []string{overWebTransport, overWebSocket} {
		logPaired(b, kind, all[overUDP], all[kind])
	}
	if len(all[overUDP]) == 0 || len(all[overWebTransport]) == 0 || len(all[overWebSocket]) == 0 {
		return
	}
	udp, wt, ws := median(all[overUDP]), median(all[overWebTransport]), median(all[overWebSocket])
	b.ReportMetric(wt.cpuPerMsgUS/udp.cpuPerMsgUS, "wt/udp-cpu")
	b.ReportMetric(wt.heapPerSession/udp.heapPerSession, "wt/udp-heap")
	b.ReportMetric(wt.rssPerSession/udp.rssPerSession, "wt/udp-rss")
	b.ReportMetric(wt.netPerMsgUS/udp.netPerMsgUS, "wt/udp-cpu-less-idle")
	b.ReportMetric(ws.cpuPerMsgUS/udp.cpuPerMsgUS, "ws/udp-cpu")
	b.ReportMetric(ws.heapPerSession/udp.heapPerSession, "ws/udp-heap")
	b.ReportMetric(wt.livePerSession/udp.livePerSession, "wt/udp-live-heap")
	b.ReportMetric(wt.releasedPerSession/udp.releasedPerSession, "wt/udp-released-rss")
}

// loadResult is one transport's figures in one round.
type loadResult struct {
	heapBefore, heapAfter, rssBefore, rssAfter float64 // bytes
	heapPerSession, rssPerSession              float64 // bytes
	goroutinesPerSession, stackPerSession      float64 // goroutines, and their stacks' bytes
	idleCPUms, idleTickMS                      float64 // server CPU ms per second idle; tick average idle
	loadTickMS, cpuPerMsgUS                    float64 // tick average and server CPU per message under load
	netPerMsgUS                                float64 // CPU per message less the idle CPU rate over the same time
	loadSeconds                                float64
	missing                                    int64   // echoes that did not come back within 20 s
	echoedInWindow                             int64   // echoes back by the end of the message window
	datagramsPerMsg                            float64 // v4 datagrams the server received and sent per message echoed
	// After the messages, garbage collected and free memory returned to
	// the OS (debug.FreeOSMemory), against the same before the sessions:
	// live heap and RSS per session.
	livePerSession, releasedPerSession float64
}

func (r loadResult) String() string {
	return fmt.Sprintf("heap %.1f→%.1f MiB (%.0f B/session), RSS %.1f→%.1f MiB (%.0f B/session), %.1f goroutines and %.0f B of stack per session, idle %.1f ms CPU/s tick %.3f ms; load %.1f s tick %.3f ms, %.2f µs CPU/msg (%.2f less idle), %.2f v4 datagrams in+out/msg, %d echoes in the window, %d missing; after the messages, collected and released: live heap %.0f B/session, RSS %.0f B/session",
		r.heapBefore/(1<<20), r.heapAfter/(1<<20), r.heapPerSession, r.rssBefore/(1<<20), r.rssAfter/(1<<20), r.rssPerSession, r.goroutinesPerSession, r.stackPerSession,
		r.idleCPUms, r.idleTickMS, r.loadSeconds, r.loadTickMS, r.cpuPerMsgUS, r.netPerMsgUS, r.datagramsPerMsg, r.echoedInWindow, r.missing, r.livePerSession, r.releasedPerSession)
}

func span(rs []loadResult, f func(loadResult) float64) string {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	lo, hi := slices.Min(v), slices.Max(v)
	if hi >= 1000 {
		return fmt.Sprintf("%.0f–%.0f", lo, hi)
	}
	return fmt.Sprintf("%.3g–%.3g", lo, hi)
}

// logPaired logs kind ÷ UDP round by round (the two ran one after the
// other under the same machine load) and the median of those ratios:
// CPU per message, live heap and released RSS per session.
func logPaired(b *testing.B, kind string, udp, other []loadResult) {
	n := min(len(udp), len(other))
	if n == 0 {
		return
	}
	var lines []string
	for _, f := range []struct {
		name string
		get  func(loadResult) float64
	}{
		{"CPU/msg", func(r loadResult) float64 { return r.cpuPerMsgUS }},
		{"live heap/session", func(r loadResult) float64 { return r.livePerSession }},
		{"released RSS/session", func(r loadResult) float64 { return r.releasedPerSession }},
	} {
		ratios := make([]float64, n)
		text := make([]string, n)
		for i := range n {
			ratios[i] = f.get(other[i]) / f.get(udp[i])
			text[i] = fmt.Sprintf("%.2f", ratios[i])
		}
		sorted := slices.Sorted(slices.Values(ratios))
		lines = append(lines, fmt.Sprintf("%s ÷ udp %s by round: %s (median %.2f)", kind, f.name, strings.Join(text, ", "), sorted[n/2]))
	}
	b.Log(strings.Join(lines, "; "))
}

// median is the round with the median CPU per message (the memory figures
// of the same round).
func median(rs []loadResult) loadResult {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b loadResult) int {
		switch {
		case a.cpuPerMsgUS < b.cpuPerMsgUS:
			return -1
		case a.cpuPerMsgUS > b.cpuPerMsgUS:
			return 1
		}
		return 0
	})
	return s[len(s)/2]
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// loadConfig lets one address (every client is 127.0.0.1) open and hold
// every session, with the echo module loaded and the ops listener on.
const loadConfig = `[server]
max_clients = 2048
client_timeout = 30.0

[network]
connect_burst = 1048576
connect_refill_per_second = 1000000.0
prefix_burst = 1048576
prefix_refill_per_second = 1000000.0
half_open_per_address = 65536
half_open_per_prefix = 65536

[ops]
listen = "127.0.0.1:0"

[web]
enabled = true
port = 0
max_sessions = 4096
connections_per_address = 1024
`

// loadServer is one `sparkhost run` of the benchmark.
type loadServer struct {
	cmd     *exec.Cmd
	addr    netip.AddrPort
	pin     string
	webPort int
	ops     string
	// heapProfile is where the server writes a heap profile on SIGUSR1.
	heapProfile string
}

// roundLoad is one transport's server, sessions and running sums in a
// round.
type roundLoad struct {
	kind     string
	srv      *loadServer
	sessions []*loadSession
	r        loadResult

	liveBefore, releasedBefore float64
	m0, m1                     map[string]float64
	cpu0                       time.Duration
	// Sums over the message turns.
	cpu                 time.Duration
	echoed              int64
	dgrams, tick, ticks float64
}

// runSessionRound measures every transport of kinds in one round, each on
// its own server, all up at once: the same idle window for all, then the
// message phase in turns (each transport's sessions send msgs/turns
// messages while the others' sit idle, the transports taking turns), so
// that the machine's load, which drifts over seconds on a shared machine,
// weighs on every transport alike.
func runSessionRound(b *testing.B, bin string, kinds []string, n, msgs, rate, turns, round int) []loadResult {
	loads := make([]*roundLoad, len(kinds))
	for i, kind := range kinds {
		loads[i] = &roundLoad{kind: kind, srv: startLoadServer(b, bin)}
		defer loads[i].srv.stop()
	}
	time.Sleep(2 * time.Second) // start-up done
	for _, l := range loads {
		l.liveBefore, l.releasedBefore = l.srv.released(b, fmt.Sprintf("%s-%d-before", l.kind, round+1))
		l.m0 = l.srv.metrics(b)
		l.r.heapBefore, l.r.rssBefore = l.m0["go_memstats_heap_alloc_bytes"], l.srv.rss(b)
	}
	for _, l := range loads {
		l.sessions = connectSessions(b, l.srv, l.kind, n)
		defer closeSessions(l.sessions)
	}
	time.Sleep(3 * time.Second) // handshakes' garbage and timers settle
	for _, l := range loads {
		l.afterConnect(b, n)
	}

	// Idle: every server over the same window.
	idle := 3 * time.Second
	stops := make([]func(), len(loads))
	for i, l := range loads {
		stops[i] = l.srv.perf(b, fmt.Sprintf("%s-%d-idle", l.kind, round+1))
		l.cpu0 = l.srv.cpu(b)
	}
	time.Sleep(idle)
	for i, l := range loads {
		cpu1, m2 := l.srv.cpu(b), l.srv.metrics(b)
		stops[i]()
		l.r.idleCPUms = float64(cpu1-l.cpu0) / float64(time.Millisecond) / idle.Seconds()
		l.r.idleTickMS = tickAvgMS(l.m1, m2)
	}

	for turn := range turns {
		count := msgs/turns + btoi(turn < msgs%turns)
		for _, l := range loads {
			l.messageTurn(b, count, rate, fmt.Sprintf("%s-%d-%d", l.kind, round+1, turn+1))
		}
	}
	out := make([]loadResult, len(loads))
	for i, l := range loads {
		l.finish(b, n, msgs, round)
		out[i] = l.r
	}
	return out
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

func closeSessions(sessions []*loadSession) {
	for _, s := range sessions {
		s.c.Close()
		if s.tr != nil {
			s.tr.Close()
		}
	}
}

// afterConnect reads the memory figures of the sessions just connected.
func (l *roundLoad) afterConnect(b *testing.B, n int) {
	l.m1 = l.srv.metrics(b)
	r := &l.r
	r.heapAfter, r.rssAfter = l.m1["go_memstats_heap_alloc_bytes"], l.srv.rss(b)
	r.heapPerSession = (r.heapAfter - r.heapBefore) / float64(n)
	r.goroutinesPerSession = (l.m1["go_goroutines"] - l.m0["go_goroutines"]) / float64(n)
	r.stackPerSession = (l.m1["go_memstats_stack_inuse_bytes"] - l.m0["go_memstats_stack_inuse_bytes"]) / float64(n)
	r.rssPerSession = (r.rssAfter - r.rssBefore) / float64(n)
}

// messageTurn has every session of l send count echo messages and adds
// the server's CPU time, echoes, datagrams and ticks over the turn's
// window (echoAll) to l's sums.
func (l *roundLoad) messageTurn(b *testing.B, count, rate int, name string) {
	stopPerf := l.srv.perf(b, name)
	stopStat := l.srv.sendCalls(b, l.kind)
	m0, cpu0 := l.srv.metrics(b), l.srv.cpu(b)
	var cpu1 time.Duration
	var m1 map[string]float64
	start := time.Now()
	echoed, missing := echoAll(b, l.sessions, count, rate, func() {
		cpu1, m1 = l.srv.cpu(b), l.srv.metrics(b)
		l.r.loadSeconds += time.Since(start).Seconds()
		stopPerf()
		stopStat()
	})
	l.cpu += cpu1 - cpu0
	l.echoed += echoed
	l.r.missing += missing
	dgrams := func(m map[string]float64) float64 {
		return m["sparkhost_net_datagrams_received_total"] + m["sparkhost_net_datagrams_sent_total"]
	}
	l.dgrams += dgrams(m1) - dgrams(m0)
	l.tick += m1["sparkhost_tick_duration_seconds_sum"] - m0["sparkhost_tick_duration_seconds_sum"]
	l.ticks += m1["sparkhost_tick_duration_seconds_count"] - m0["sparkhost_tick_duration_seconds_count"]
	if missing > 0 {
		l.logMissing(b, missing, m1)
	}
}

func (l *roundLoad) logMissing(b *testing.B, missing int64, m map[string]float64) {
	var dropped, overflowed uint64
	for _, s := range l.sessions {
		if c, ok := s.tr.(*web.Client); ok {
			dropped, overflowed = dropped+c.Dropped.Load(), overflowed+c.Overflowed.Load()
		}
	}
	b.Logf("%s: %d echoes missing; the clients' transports dropped %d datagrams at a full queue, sent %d on the overflow stream", l.kind, missing, dropped, overflowed)
	for name, v := range m {
		if v != 0 && (strings.Contains(name, "drop") || strings.Contains(name, "refused") || strings.Contains(name, "overflow") || strings.Contains(name, "retrans")) {
			b.Logf("%s %s: %s = %v", l.kind, "echoes missing", name, v)
		}
	}
}

// finish turns the sums into figures per message and reads the memory
// after the messages, collected and released.
func (l *roundLoad) finish(b *testing.B, n, msgs, round int) {
	r := &l.r
	per := float64(max(l.echoed, 1))
	r.echoedInWindow = l.echoed
	r.datagramsPerMsg = l.dgrams / per
	r.cpuPerMsgUS = float64(l.cpu) / float64(time.Microsecond) / per
	r.netPerMsgUS = r.cpuPerMsgUS - r.idleCPUms*1000*r.loadSeconds/per
	if l.ticks > 0 {
		r.loadTickMS = l.tick / l.ticks * 1000
	}
	liveAfter, releasedAfter := l.srv.released(b, fmt.Sprintf("%s-%d-after", l.kind, round+1))
	r.livePerSession = (liveAfter - l.liveBefore) / float64(n)
	r.releasedPerSession = (releasedAfter - l.releasedBefore) / float64(n)
}

// released has the server collect its garbage and return what is free to
// the OS (SIGUSR1 with SPARKHOST_HEAPPROFILE, which writes a heap
// profile), then reads its live heap and RSS. With SPARK_SESSION_HEAPPROFILE
// set to a directory the profile is kept there as NAME.pprof.
func (s *loadServer) released(b *testing.B, name string) (heap, rss float64) {
	_ = os.Remove(s.heapProfile)
	if err := s.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(s.heapProfile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the server wrote no heap profile on SIGUSR1")
		}
	}
	if dir := os.Getenv("SPARK_SESSION_HEAPPROFILE"); dir != "" {
		for _, ext := range []string{"", ".goroutines"} {
			if raw, err := os.ReadFile(s.heapProfile + ext); err == nil {
				_ = os.WriteFile(filepath.Join(dir, name+".pprof"+ext), raw, 0o600)
			}
		}
	}
	return s.metrics(b)["go_memstats_heap_alloc_bytes"], s.rss(b)
}

// tickAvgMS is the mean tick duration between two scrapes.
func tickAvgMS(a, b map[string]float64) float64 {
	dn := b["sparkhost_tick_duration_seconds_count"] - a["sparkhost_tick_duration_seconds_count"]
	if dn <= 0 {
		return 0
	}
	return (b["sparkhost_tick_duration_seconds_sum"] - a["sparkhost_tick_duration_seconds_sum"]) / dn * 1000
}

func startLoadServer(b *testing.B, bin string) *loadServer {
	b.Helper()
	tmp := shortTempDir(b)
	echo := filepath.Join(tmp, "echo.lua")
	cfg := filepath.Join(tmp, "config.toml")
	if err := os.WriteFile(echo, []byte(echoScript), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(loadConfig+"\n[modules]\nload = ["+strconv.Quote(echo)+"]\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	args := []string{bin, "run", "--config", cfg, "--port", "0", "--bind", "127.0.0.1", "--data-dir", filepath.Join(tmp, "data")}
	if _, err := exec.LookPath("taskset"); err == nil {
		args = append([]string{"taskset", "-c", "0"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	heapProfile := filepath.Join(tmp, "heap.pprof")
	cmd.Env = append(os.Environ(), "SPARK_NETWORK_BIND_ADDRESS=", "GOMAXPROCS=1", "SPARKHOST_HEAPPROFILE="+heapProfile)
	if os.Getenv("SPARK_SESSION_HEAPPROFILE") != "" {
		// Profiles worth reading: one sample per 4 KiB allocated (the CPU
		// figures of such a run are inflated, most where most is allocated).
		cmd.Env = append(cmd.Env, "SPARKHOST_HEAPPROFILE_RATE=4096")
	}
	if os.Getenv("SPARK_TEST_SERVER_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &loadServer{cmd: cmd, heapProfile: heapProfile}
	sc := bufio.NewScanner(stdout)
	for (s.pin == "" || !s.addr.IsValid() || s.webPort == 0 || s.ops == "") && sc.Scan() {
		l := sc.Text()
		if a, ok := strings.CutPrefix(l, "sparkhost listening on "); ok {
			s.addr = netip.MustParseAddrPort(a)
		}
		if p, ok := strings.CutPrefix(l, "server identity pin: "); ok {
			s.pin = p
		}
		if w, ok := strings.CutPrefix(l, "web transports on port "); ok {
			s.webPort, _ = strconv.Atoi(w[:strings.IndexByte(w, ':')])
		}
		if u, ok := strings.CutPrefix(l, "status page, metrics and probes on http://"); ok {
			s.ops = strings.TrimSuffix(u, "/")
		}
	}
	if s.pin == "" || s.webPort == 0 || s.ops == "" {
		s.stop()
		b.Fatal("the server did not print its addresses and pin")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return s
}

func (s *loadServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// cpu is the server process's user+system time (/proc/PID/stat).
func (s *loadServer) cpu(b *testing.B) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	// After the command: state is field 3 of the whole line, utime 14, stime 15.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / clkTck
}

// rss is the server's resident set (/proc/PID/status VmRSS), in bytes.
func (s *loadServer) rss(b *testing.B) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for l := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb * 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// metrics reads the server's /metrics: counters, gauges, and histograms'
// _sum and _count.
func (s *loadServer) metrics(b *testing.B) map[string]float64 {
	rsp, err := http.Get("http://" + s.ops + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer rsp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(rsp.Body)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				out[name] += m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[name] += m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[name+"_sum"] += m.GetHistogram().GetSampleSum()
				out[name+"_count"] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// sendCalls, with SPARK_SESSION_SENDCALLS set, counts the server's send
// system calls and the packets it puts on the loopback device during the
// message phase (`perf stat` of the syscall and net tracepoints) and logs
// them when the returned func is called.
func (s *loadServer) sendCalls(b *testing.B, kind string) func() {
	if os.Getenv("SPARK_SESSION_SENDCALLS") == "" {
		return func() {}
	}
	var out strings.Builder
	p := exec.Command("perf", "stat", "-x", ",", "-e", "syscalls:sys_enter_sendmmsg,syscalls:sys_enter_sendmsg,net:net_dev_queue",
		"-p", strconv.Itoa(s.cmd.Process.Pid))
	p.Stderr = &out
	if err := p.Start(); err != nil {
		b.Logf("perf stat: %v", err)
		return func() {}
	}
	return func() {
		_ = p.Process.Signal(syscall.SIGINT)
		_ = p.Wait()
		var counts []string
		for l := range strings.Lines(out.String()) {
			if f := strings.Split(strings.TrimSpace(l), ","); len(f) > 2 {
				counts = append(counts, f[2]+" "+f[0])
			}
		}
		b.Logf("%s message phase: %s", kind, strings.Join(counts, ", "))
	}
}

// perf records the server with `perf record` until the returned func is
// called, when SPARK_SESSION_PERF names a directory: call stacks at 999 Hz,
// or the events SPARK_SESSION_PERF_EVENTS lists (e.g. net:net_dev_queue,
// whose len field sorts the packets the server sent by size).
func (s *loadServer) perf(b *testing.B, name string) func() {
	dir := os.Getenv("SPARK_SESSION_PERF")
	if dir == "" {
		return func() {}
	}
	what := []string{"-g", "-F", "999"}
	if ev := os.Getenv("SPARK_SESSION_PERF_EVENTS"); ev != "" {
		what = []string{"-e", ev}
	}
	args := append(append([]string{"record"}, what...), "-o", filepath.Join(dir, name+".perf.data"), "-p", strconv.Itoa(s.cmd.Process.Pid))
	p := exec.Command("perf", args...)
	if err := p.Start(); err != nil {
		b.Logf("perf: %v", err)
		return func() {}
	}
	return func() {
		_ = p.Process.Signal(syscall.SIGINT)
		_ = p.Wait()
	}
}

// loadSession is one client of the benchmark and its echo count.
type loadSession struct {
	c      *netstack.Client
	tr     transport.Transport // the web transport, nil over UDP
	echoes atomic.Int64
	more   chan struct{}
}

func loadRegistry() *wire.Registry {
	reg := gamemsg.NewRegistry()
	for _, s := range []wire.Schema{
		{ID: typeEchoIn, Name: "echo_in", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 2, MaxLen: 3002, StringFieldOffset: 0, RequiresAdmitted: true},
		{ID: typeEchoOut, Name: "echo_out", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 2, MaxLen: 3002, StringFieldOffset: 0, RequiresAdmitted: true},
	} {
		if err := reg.Register("echo", s); err != nil {
			panic(err)
		}
	}
	return reg
}

// connectSessions admits n clients over kind, eight handshakes at a time.
func connectSessions(b *testing.B, srv *loadServer, kind string, n int) []*loadSession {
	b.Helper()
	var wtURL, wsURL string
	var hashes [][32]byte
	if kind != overUDP {
		in := srv.webInfo(b)
		wsURL = fmt.Sprintf("ws://127.0.0.1:%d%s", in.Port, in.WebSocket.Path)
		wtURL = fmt.Sprintf("https://127.0.0.1:%d%s", in.Port, in.WebTransport.Path)
		for _, h := range in.WebTransport.CertHashes {
			v, _ := base64.StdEncoding.DecodeString(h.Value)
			hashes = append(hashes, [32]byte(v))
		}
	}
	out := make([]*loadSession, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := &loadSession{more: make(chan struct{}, 1)}
			cfg := netstack.ClientConfig{Server: srv.addr, Name: fmt.Sprintf("s%d", i), Pin: srv.pin, Registry: loadRegistry(),
				Timeout: 30 * time.Second} // a loaded client process must not time its sessions out
			var err error
			switch kind {
			case overWebTransport:
				var c *web.Client
				c, err = web.DialWebTransport(ctx, wtURL, web.ClientOptions{CertHashes: hashes})
				if err == nil {
					s.tr, cfg.Transport, cfg.Server = c, c, c.Peer()
				}
			case overWebSocket:
				var c *web.Client
				c, err = web.DialWebSocket(ctx, wsURL, web.ClientOptions{})
				if err == nil {
					s.tr, cfg.Transport, cfg.Server = c, c, c.Peer()
				}
			}
			if err == nil {
				s.c, _, err = client.Dial(ctx, cfg)
			}
			if err != nil {
				if s.tr != nil {
					s.tr.Close()
				}
				errs <- fmt.Errorf("session %d over %s: %w", i, kind, err)
				return
			}
			go s.count()
			out[i] = s
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return out
}

// count counts the echoes the session receives until it closes.
func (s *loadSession) count() {
	for {
		m, err := s.c.Receive(context.Background())
		if err != nil {
			return
		}
		if m.Header.Type == typeEchoOut {
			s.echoes.Add(1)
			select {
			case s.more <- struct{}{}:
			default:
			}
		}
	}
}

// echoCap is how long the message window may last after the sending
// time when echoes are missing: a lost echo waited for would otherwise add
// idle time to the transport's figure.
const echoCap = time.Second

// echoAll has every session send msgs echo messages at rate a second
// (staggered, each flushed at once). The window ends when every echo is
// back, or echoCap after the sending time: then it calls atEnd and counts
// the echoes back by then; it returns that count, and the echoes still
// missing 20 s after the last was sent.
func echoAll(b *testing.B, sessions []*loadSession, msgs, rate int, atEnd func()) (echoed, missing int64) {
	b.Helper()
	payload := echoPayload(strings.Repeat("x", 30))
	every := time.Second / time.Duration(rate)
	base := make([]int64, len(sessions))
	for i, s := range sessions {
		base[i] = s.echoes.Load()
	}
	back := func() (n int64) {
		for i, s := range sessions {
			n += s.echoes.Load() - base[i]
		}
		return n
	}
	var wg sync.WaitGroup
	var lost atomic.Int64
	errs := make(chan error, len(sessions))
	windowCap := time.Now().Add(time.Duration(msgs)*every + echoCap)
	for i, s := range sessions {
		wg.Go(func() {
			time.Sleep(every * time.Duration(i) / time.Duration(len(sessions)))
			tk := time.NewTicker(every)
			defer tk.Stop()
			for range msgs {
				if err := s.c.Send(typeEchoIn, wire.Reliable, payload); err != nil {
					reason, text := s.c.CloseReason()
					errs <- fmt.Errorf("session %d: %w (reason %v %q)", i, err, reason, text)
					return
				}
				s.c.Flush()
				<-tk.C
			}
			deadline := time.After(20 * time.Second)
			for s.echoes.Load()-base[i] < int64(msgs) {
				select {
				case <-s.more:
				case <-deadline:
					lost.Add(int64(msgs) - (s.echoes.Load() - base[i]))
					return
				}
			}
		})
	}
	for want := int64(len(sessions) * msgs); back() < want && time.Now().Before(windowCap); {
		time.Sleep(2 * time.Millisecond)
	}
	atEnd()
	echoed = back()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return echoed, lost.Load()
}

// webInfo fetches /web.json.
func (s *loadServer) webInfo(b *testing.B) web.Info {
	rsp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", s.webPort, web.PathInfo))
	if err != nil {
		b.Fatal(err)
	}
	defer rsp.Body.Close()
	var in web.Info
	if err := json.NewDecoder(rsp.Body).Decode(&in); err != nil {
		b.Fatal(err)
	}
	if in.WebTransport == nil || in.WebSocket == nil || len(in.WebTransport.CertHashes) == 0 {
		b.Fatalf("%s: %+v", web.PathInfo, in)
	}
	return in
}
