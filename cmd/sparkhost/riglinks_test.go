package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/internal/netrig"
	"github.com/sparkhost/sparkhost/modules/deathmatch/netbot"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// The send-rate scenarios on the real-network rig (docs/netrig.md): a real
// `sparkhost run --module deathmatch` in the server's namespace and 16
// deathmatch bots, each in its own client namespace on its own shaped
// link. docs/performance.md ("Send rate that fits the link") has the goals
// and the figures.

// rigBots is how many bots a scenario runs, one per client namespace.
const rigBots = 16

// rigSeconds is a scenario's length: SPARK_RIG_SECONDS or def.
func rigSeconds(t *testing.T, def int) time.Duration {
	if v := os.Getenv("SPARK_RIG_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 5 || n > 600 {
			t.Fatalf("SPARK_RIG_SECONDS=%q: want 5..600", v)
		}
		return time.Duration(n) * time.Second
	}
	return time.Duration(def) * time.Second
}

// rigReplication is the server's replication rate in a scenario:
// SPARK_RIG_REPLICATION or 20 (the default), at most the tick rate.
func rigReplication(t *testing.T) int {
	v := os.Getenv("SPARK_RIG_REPLICATION")
	if v == "" {
		return 20
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 60 {
		t.Fatalf("SPARK_RIG_REPLICATION=%q: want 1..60", v)
	}
	return n
}

// rigBadRate is the bad links' rate in bits/s: SPARK_RIG_BAD_RATE or the
// bad profile's 256 kbit/s (a narrower one makes the game want more than
// the link carries with 16 bots).
func rigBadRate(t *testing.T) int64 {
	v := os.Getenv("SPARK_RIG_BAD_RATE")
	if v == "" {
		return netrig.Bad.Rate
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 16000 || n > 100_000_000 {
		t.Fatalf("SPARK_RIG_BAD_RATE=%q: want 16000..100000000 bits/s", v)
	}
	return n
}

// rigRefresh is the server's full-refresh period in seconds:
// SPARK_RIG_REFRESH or 1.0 (the default). A refresh at every replication
// frame (0.01) makes each frame carry every field of every body: the game
// then wants more than a bad link carries.
func rigRefresh(t *testing.T) string {
	v := os.Getenv("SPARK_RIG_REFRESH")
	if v == "" {
		return "1.0"
	}
	if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0.01 || f > 60 {
		t.Fatalf("SPARK_RIG_REFRESH=%q: want 0.01..60 seconds", v)
	}
	return v
}

// goal checks a measured goal: a failure with SPARK_RIG_GOALS=1 (the
// measuring runs of docs/performance.md), else a log line. The figures
// are timings of processes on a shared machine — the bots' own process
// starved of the CPU shows in every tail — so a test run on a busy CI
// machine holds the sessions to the goals, and the timings are measured.
func goal(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	switch {
	case ok:
	case os.Getenv("SPARK_RIG_GOALS") == "1":
		t.Errorf(format, args...)
	default:
		t.Logf("goal missed (a failure with SPARK_RIG_GOALS=1): "+format, args...)
	}
}

// TestRigMobileLinks: 16 bots, every one on the mobile profile, for two
// minutes: no disconnects (so every reliable message was acknowledged: an
// unacknowledged one ends the session), the server reports its send-queue
// delay, and (goal) its p99 is within 200 ms.
func TestRigMobileLinks(t *testing.T) {
	profiles := make([]netrig.Profile, rigBots)
	for i := range profiles {
		profiles[i] = netrig.Mobile
	}
	res := runRigScenario(t, profiles, rigSeconds(t, 120))
	for i, b := range res.bots {
		if b.end != "ok" {
			t.Errorf("bot %d (%s): %s", i+1, profiles[i].Name, b.end)
		}
	}
	q := res.server.queueP99
	if q < 0 {
		t.Fatal("the server's /metrics has no send-queue delay histogram")
	}
	goal(t, q <= 200*time.Millisecond, "server send-queue delay p99 %v; want ≤ 200ms", q)
}

// TestRigBadLinks: 15 bots on the bad profile (256 kbit/s) beside one on a
// healthy (home) link: every session stays, every bot gets InputAcks and
// entity updates; goals: entity state at the clients no older than 500 ms
// p99, input → InputAck p99 within the link's RTT (the profile's 300 ms +
// 80 ms jitter) + 100 ms, and the healthy bot gets its full tick rate of
// InputAcks.
func TestRigBadLinks(t *testing.T) {
	profiles := make([]netrig.Profile, rigBots)
	bad := netrig.Bad
	bad.Rate = rigBadRate(t)
	for i := range profiles {
		profiles[i] = bad
	}
	healthy := rigBots - 1
	profiles[healthy] = netrig.Home
	res := runRigScenario(t, profiles, rigSeconds(t, 60))
	var age, ack, rtt []time.Duration
	for i, b := range res.bots {
		if b.end != "ok" {
			t.Errorf("bot %d (%s): %s", i+1, profiles[i].Name, b.end)
		}
		if len(b.ack) == 0 || b.updates == 0 {
			t.Errorf("bot %d (%s): %d InputAcks, %d entity updates", i+1, profiles[i].Name, len(b.ack), b.updates)
		}
		if i != healthy {
			age, ack, rtt = append(age, b.age...), append(ack, b.ack...), append(rtt, b.rtt...)
		}
	}
	// The link's RTT is the profile's, at its worst (delay + jitter): the
	// heartbeat RTT measured includes the queue the server builds, which
	// is what the goal is about.
	a, k, r := pct(age, 99), pct(ack, 99), bad.Delay+bad.Jitter
	t.Logf("bad links: state age p99 %v, input→ack p99 %v, heartbeat RTT p99 %v (the link's: %v)", a, k, pct(rtt, 99), r)
	goal(t, a <= 500*time.Millisecond, "entity state age p99 %v on the bad links; want ≤ 500ms", a)
	goal(t, k <= r+100*time.Millisecond, "input → InputAck p99 %v on the bad links; want ≤ RTT (%v) + 100ms", k, r)
	h := res.bots[healthy]
	sec := res.played.Seconds()
	ackRate, updRate := float64(h.acks)/sec, float64(h.updates)/sec
	t.Logf("healthy link: %.1f InputAcks/s (tick %d), %.1f entity updates/s, input→ack p99 %v", ackRate, res.tick, updRate, pct(h.ack, 99))
	goal(t, ackRate >= 0.9*float64(res.tick), "healthy link got %.1f InputAcks/s; want its tick rate %d (−10%%)", ackRate, res.tick)
}

// rigResult is what a scenario measured.
type rigResult struct {
	bots   []*rigBot
	played time.Duration // from the last bot's start to the end
	tick   int           // the server's tick rate
	server serverView
}

// serverView is what the server's /metrics said at the end (−1: absent).
type serverView struct {
	queueP99 time.Duration
}

// rigBot is one bot's measurements.
type rigBot struct {
	mu      sync.Mutex
	end     string
	ack     []time.Duration // input → first InputAck covering it
	age     []time.Duration // entity state age just before an update replaced it
	rtt     []time.Duration // heartbeat RTT, sampled every 100 ms
	updates int             // EntityStateUpdates received
	acks    uint64          // InputAcks reconciled (netbot.Stats.Acks)
	seen    map[uint32]time.Time
	up      time.Duration // the link's mean one-way delay up: RTT minus it is the way down
	ping    time.Duration
	pingAt  time.Time
	down    float64 // bytes/s received, sampled with the ping
	downN   int
}

// observe measures one message: an EntityStateUpdate or EntitySpawn of an
// entity known before gives the age its state had reached (the time since
// the last one, plus the way down of this one, estimated as the heartbeat
// RTT less the link's one-way delay up, whose queue stays empty: the bots
// send far below the rate).
func (b *rigBot) observe(bt *netbot.Bot, m netstack.Message) {
	now := time.Now()
	if now.Sub(b.pingAt) >= 100*time.Millisecond {
		st := bt.NetStats()
		b.ping, b.pingAt = st.Ping, now
		b.mu.Lock()
		if b.ping > 0 {
			b.rtt = append(b.rtt, b.ping)
		}
		if st.BandwidthDown > 0 {
			b.down += st.BandwidthDown
			b.downN++
		}
		b.mu.Unlock()
	}
	if m.Header.Type != gamemsg.TypeEntityStateUpdate && m.Header.Type != gamemsg.TypeEntitySpawn {
		return
	}
	if len(m.Payload) < 4 {
		return
	}
	id := binary.LittleEndian.Uint32(m.Payload)
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.Header.Type == gamemsg.TypeEntityStateUpdate {
		b.updates++
	}
	if last, ok := b.seen[id]; ok && now.Sub(last) < 3*time.Second {
		b.age = append(b.age, now.Sub(last)+max(0, b.ping-b.up))
	}
	b.seen[id] = now
}

// runRigScenario runs one bot per profile against a real server for d.
func runRigScenario(t *testing.T, profiles []netrig.Profile, d time.Duration) *rigResult {
	rig := netrig.New(t, netrig.Config{Clients: len(profiles), Profile: netrig.None, Lifetime: d + 5*time.Minute})
	for i, p := range profiles {
		if err := rig.SetProfile(i, p); err != nil {
			t.Fatal(err)
		}
	}
	bin := os.Getenv("SPARK_RIG_BIN") // another build's server, to compare
	if bin == "" {
		bin = buildBinary(t)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "rig.toml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("[network]\nexposure = \"internet\"\nadmitted_per_address = 0\nadmitted_per_prefix = 0\n[ops]\nlisten = \"%s:9150\"\n[match]\nreplication_rate = %d\nrefresh_seconds = %s\n", rig.Server.Addr, rigReplication(t), rigRefresh(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := rig.Server.Command(ctx, bin, "run", "--config", conf, "--internet", "--bind", rig.Server.Addr.String(),
		"--port", "27015", "--data-dir", filepath.Join(dir, "server"), "--module", "deathmatch")
	var stderr strings.Builder
	lw := &lockedWriter{w: &stderr}
	srv.Stderr = lw
	t.Cleanup(func() {
		if t.Failed() {
			lw.mu.Lock()
			t.Logf("server log:\n%s", stderr.String())
			lw.mu.Unlock()
		}
	})
	pin := startRigServer(t, srv)
	addr := rig.Server.Addr.String() + ":27015"

	res := &rigResult{bots: make([]*rigBot, len(profiles)), server: serverView{queueP99: -1}}
	var wg sync.WaitGroup
	runCtx, stop := context.WithTimeout(context.Background(), d+time.Minute) // the bound; the bots stop at d
	defer stop()
	var start time.Time
	bots := make([]*netbot.Bot, len(profiles))
	for i, p := range profiles {
		rb := &rigBot{seen: make(map[uint32]time.Time), up: p.Delay / 2, end: "not connected"}
		res.bots[i] = rb
		var bt *netbot.Bot
		cfg := netbot.Config{Name: fmt.Sprintf("bot%d", i+1), Seed: uint64(1000 + i),
			Client:  netstack.ClientConfig{Server: netip.MustParseAddrPort(addr), Pin: pin},
			Observe: func(m netstack.Message) { rb.observe(bt, m) },
			OnInputAck: func(l time.Duration) {
				rb.mu.Lock()
				rb.ack = append(rb.ack, l)
				rb.mu.Unlock()
			}}
		err := rig.Client(i).Do(func() error {
			var err error
			bt, err = netbot.Dial(runCtx, cfg)
			return err
		})
		if err != nil {
			rb.end = "connect failed: " + err.Error()
			continue
		}
		bots[i] = bt
	}
	start = time.Now()
	playCtx, stopPlay := context.WithTimeout(runCtx, d)
	defer stopPlay()
	// The bottleneck's queue once the match has settled (its start fills
	// every link at once).
	queue := sampleBottleneck(playCtx, rig, d/3)
	for i, bt := range bots {
		if bt == nil {
			continue
		}
		rb := res.bots[i]
		wg.Go(func() {
			err := bt.Run(playCtx)
			rb.mu.Lock()
			rb.acks = bt.Stats().Acks
			defer rb.mu.Unlock()
			if rb.end = "ok"; err != nil {
				rb.end = err.Error()
			}
		})
	}
	<-playCtx.Done()
	res.played = time.Since(start)
	res.server = scrapeServer(t, rig)
	wg.Wait()
	res.tick = 60
	logRigResult(t, profiles, res)
	queue.log(t)
	return res
}

// startRigServer starts the server command and returns the pin it prints.
func startRigServer(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pins := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "server identity pin: "); ok {
				pins <- p
			}
		}
	}()
	select {
	case p := <-pins:
		if _, err := trust.ParsePin(p); err != nil {
			t.Fatalf("server printed pin %q: %v", p, err)
		}
		return p
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not print its pin in 60 s")
	}
	return ""
}

// scrapeServer reads the server's /metrics inside its namespace.
func scrapeServer(t *testing.T, rig *netrig.Rig) serverView {
	v := serverView{queueP99: -1}
	// The connection is made on Do's thread, inside the namespace (an
	// http.Client would dial from another goroutine, outside it).
	var conn net.Conn
	err := rig.Server.Do(func() error {
		var err error
		conn, err = net.DialTimeout("tcp", rig.Server.Addr.String()+":9150", 10*time.Second)
		return err
	})
	var body []byte
	if err == nil {
		body, err = getOver(conn, "/metrics")
	}
	if err != nil {
		t.Logf("server /metrics: %v", err)
		return v
	}
	logPlayers(t, rig)
	if q, ok := histogramQuantile(string(body), "sparkhost_net_session_send_queue_delay_seconds", 0.99); ok {
		v.queueP99 = time.Duration(q * float64(time.Second))
	} else {
		t.Logf("server /metrics (%d bytes) has no send-queue delay histogram", len(body))
	}
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "sparkhost_net_session_") || strings.HasPrefix(l, "sparkhost_net_state_") {
			t.Log(l)
		}
	}
	return v
}

// histogramQuantile reads a Prometheus histogram family (no labels) from a
// text exposition and returns the upper bound of the bucket holding
// quantile q.
func histogramQuantile(text, family string, q float64) (float64, bool) {
	type bucket struct{ le, n float64 }
	var bs []bucket
	for _, l := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(l, family+`_bucket{le="`)
		if !ok {
			continue
		}
		le, val, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		b, err := strconv.ParseFloat(le, 64)
		if le == "+Inf" {
			b, err = 1e9, nil
		}
		if err == nil {
			bs = append(bs, bucket{b, n})
		}
	}
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return 0, false
	}
	want := q * bs[len(bs)-1].n
	for _, b := range bs {
		if b.n >= want {
			return b.le, true
		}
	}
	return bs[len(bs)-1].le, true
}

func logRigResult(t *testing.T, profiles []netrig.Profile, res *rigResult) {
	t.Logf("played %v; server send-queue delay p99 %v", res.played.Round(time.Second), res.server.queueP99)
	t.Logf("%-5s %-7s %-28s %8s %8s %8s %8s %8s %8s %8s %8s", "bot", "link", "end", "acks/s", "ack p50", "ack p99", "age p50", "age p99", "rtt p50", "upd/s", "kbit/s")
	for i, b := range res.bots {
		b.mu.Lock()
		t.Logf("%-5d %-7s %-28.28s %8.1f %8v %8v %8v %8v %8v %8.1f %8.1f", i+1, profiles[i].Name, b.end,
			float64(b.acks)/res.played.Seconds(), ms(pct(b.ack, 50)), ms(pct(b.ack, 99)),
			ms(pct(b.age, 50)), ms(pct(b.age, 99)), ms(pct(b.rtt, 50)), float64(b.updates)/res.played.Seconds(),
			8*b.down/float64(max(1, b.downN))/1000)
		b.mu.Unlock()
	}
}

// pct is the p-th percentile (nearest rank) of ds; 0 when empty.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// lockedWriter serialises writes to w (a command's output and the test).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// getOver sends one HTTP GET of path over conn and returns the body.
func getOver(conn net.Conn, path string) ([]byte, error) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: rig\r\nConnection: close\r\n\r\n", path); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 8<<20))
}

// logPlayers logs the status API's per-player link figures (the server's
// congestion control) at the end of a scenario.
func logPlayers(t *testing.T, rig *netrig.Rig) {
	var conn net.Conn
	if err := rig.Server.Do(func() error {
		var err error
		conn, err = net.DialTimeout("tcp", rig.Server.Addr.String()+":9150", 10*time.Second)
		return err
	}); err != nil {
		t.Logf("server /api/status: %v", err)
		return
	}
	body, err := getOver(conn, "/api/status")
	if err != nil {
		t.Logf("server /api/status: %v", err)
		return
	}
	var st struct {
		Players []map[string]any `json:"player_list"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Logf("server /api/status: %v", err)
		return
	}
	for _, p := range st.Players {
		t.Logf("server's view of %v: ping %v ms, rtt var %v ms, bandwidth %.0f B/s, send rate %.0f B/s, send queue %v ms, backlogged %v",
			p["name"], p["ping_ms"], p["rtt_var_ms"], p["bandwidth"], p["send_rate"], p["queue_delay_ms"], p["backlogged"])
	}
}
