package host_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// The fault model with real plugin processes under a real server
// (docs/go-plugins.md, "Limits"). The hostile test plugin misbehaves on
// console command.

func hostileRegistry() *wire.Registry {
	reg := gamemsg.NewRegistry()
	reg.Register("hostile", wire.Schema{ID: 1300, Name: "Poke", Direction: wire.ClientToServer, Channel: wire.Reliable, MaxLen: 16, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true})
	reg.Register("hostile", wire.Schema{ID: 1301, Name: "Poked", Direction: wire.ServerToClient, Channel: wire.Reliable, MaxLen: 16, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true})
	for _, s := range []wire.Schema{benchReq, benchRep} {
		reg.Register("echo2", s)
	}
	return reg
}

// execIdle runs an idempotent command of an idle plugin, again if a loaded
// machine delayed the answer past the command wait.
func execIdle(t *testing.T, srv *host.Server, line string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, err := srv.Exec(line)
		if err == nil {
			return out
		}
		if !strings.Contains(err.Error(), "the plugin is busy") || time.Now().After(deadline) {
			t.Fatalf("%s: %v", line, err)
		}
	}
}

// ticksOver returns how many ticks the server ran in d of real time.
func ticksOver(srv *host.Server, d time.Duration) (uint64, time.Duration) {
	start, t0 := srv.Stats().Ticks, time.Now()
	time.Sleep(d)
	return srv.Stats().Ticks - start, time.Since(t0)
}

// TestSlowPluginLeavesTheServerAt60Hz: a plugin sleeping 200 ms every tick
// would hold a server that waits for it at 5 Hz. The server keeps ≥ 50 Hz,
// an in-process module and the plugin itself still answer players (the
// plugin late), and `module info` shows how far behind it runs and how
// long its ticks waited for it.
func TestSlowPluginLeavesTheServerAt60Hz(t *testing.T) {
	path := testplugin.Build(t, "./host/testdata/plugins/hostile")
	srv, _ := startHost(t, withModules(path), goEcho())
	c := dialAs(t, srv, "alice", hostileRegistry())
	if out := execIdle(t, srv, "hostile_sleep 200"); out != "ok" {
		t.Fatalf("hostile_sleep: %q", out)
	}
	n, took := ticksOver(srv, 3*time.Second)
	hz := float64(n) / took.Seconds()
	t.Logf("with a plugin sleeping 200 ms a tick: %d ticks in %v = %.1f Hz", n, took.Round(time.Millisecond), hz)
	if hz < 50 {
		t.Fatalf("the server ran at %.1f Hz", hz)
	}
	echoOnce(t, c, 1) // the in-process module, at once
	if err := c.Send(1300, wire.Reliable, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if m := waitFor(t, c, 1301); string(m.Payload) != "late" {
		t.Fatalf("the plugin answered %q", m.Payload)
	}
	info, _ := srv.Exec("module info hostile")
	t.Logf("module info hostile:\n%s", info)
	m := regexp.MustCompile(`answers late (\d+), ticks held (\d+), answer time (\S+)`).FindStringSubmatch(info)
	if m == nil || !strings.Contains(info, "state running") {
		t.Fatalf("module info lacks the lateness figures:\n%s", info)
	}
	held, _ := strconv.Atoi(m[2])
	late, _ := strconv.Atoi(m[1])
	if late < 5 || held < 100 {
		t.Errorf("answers late %d, ticks held %d after 3 s at 5 answers a second", late, held)
	}
	// Every late answer is a tick that waited for it (same_tick) in vain.
	w := regexp.MustCompile(`ticks waited for its answer (\d+), (\S+) in all`).FindStringSubmatch(info)
	if w == nil {
		t.Fatalf("module info lacks the ticks' waits for the plugin:\n%s", info)
	}
	waits, _ := strconv.Atoi(w[1])
	if d, err := time.ParseDuration(w[2]); err != nil || waits < late || d <= 0 {
		t.Errorf("ticks waited %d times, %s in all (%v), with %d answers late", waits, w[2], err, late)
	}
	if _, err := srv.Exec("hostile_sleep 0"); err != nil {
		t.Logf("hostile_sleep 0 while behind: %v", err) // busy is a fine answer here
	}
}

// TestPluginOverItsMemoryCapIsRestarted: an allocating plugin is killed at
// its cap (64 MiB here) with the reason, and restarted like after a crash;
// the player stays connected.
func TestPluginOverItsMemoryCapIsRestarted(t *testing.T) {
	path := testplugin.Build(t, "./host/testdata/plugins/hostile")
	srv, _ := startHost(t, func(c *config.Config) {
		c.Modules.Load = []string{path}
		c.Modules.PluginMemoryMiB = 64
		c.Modules.RestartBackoff = 0.2
	})
	c := dialAs(t, srv, "alice", hostileRegistry())
	info, _ := srv.Exec("module info hostile")
	if !strings.Contains(info, " resident of a 64.0 MiB cap") {
		t.Fatalf("module info shows no memory:\n%s", info)
	}
	execIdle(t, srv, "hostile_eat 1")
	eventually(t, "the kill at the cap and the restart", func() bool {
		info, _ = srv.Exec("module info hostile")
		return strings.Contains(info, "crashed: exceeded its memory cap 64.0 MiB (resident ") &&
			strings.Contains(info, "restarted (attempt ") && strings.Contains(info, "state running")
	})
	t.Logf("module info hostile:\n%s", info)
	if err := c.Send(1300, wire.Reliable, []byte("back")); err != nil {
		t.Fatal(err)
	}
	if m := waitFor(t, c, 1301); string(m.Payload) != "back" {
		t.Fatalf("the restarted plugin answered %q", m.Payload)
	}
	select {
	case <-c.Done():
		t.Fatal("the player was disconnected")
	default:
	}
}

// lineCounter is a slog handler counting the records whose message starts
// with a prefix, and keeping the Warn lines.
type lineCounter struct {
	mu     *sync.Mutex
	counts map[string]int
	warns  *[]string
}

func (h lineCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h lineCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := strings.Fields(r.Message); len(f) > 0 {
		h.counts[f[0]]++
	}
	if r.Level == slog.LevelWarn {
		line := r.Message
		r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
		*h.warns = append(*h.warns, line)
	}
	return nil
}
func (h lineCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h lineCounter) WithGroup(string) slog.Handler      { return h }

// TestPluginLogFloodIsRateLimited: a plugin that logs 5000 records at once
// gets its burst and its rate into the server's log, and one summary line
// a second with the count of the rest.
func TestPluginLogFloodIsRateLimited(t *testing.T) {
	path := testplugin.Build(t, "./host/testdata/plugins/hostile")
	var mu sync.Mutex
	var warns []string
	counts := map[string]int{}
	cfg := config.Default()
	port, dataDir := 0, shortDataDir(t)
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir, Modules: []string{path}}, func(string) string { return "" })
	cfg.Modules.PluginLogLinesPerSecond, cfg.Modules.PluginLogBurst = 20, 100
	srv, err := host.New(host.Options{Config: cfg, Logger: slog.New(lineCounter{mu: &mu, counts: counts, warns: &warns})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	begin := time.Now()
	// Logging 5000 records may take the plugin longer than a command's
	// wait (under -race): "busy" is a fine answer, the flood happens.
	if _, err := srv.Exec("hostile_flood 5000"); err != nil && !strings.Contains(err.Error(), "the plugin is busy") {
		t.Fatal(err)
	}
	summary := regexp.MustCompile(`^module hostile logs too much: (\d+) lines dropped over its limit of 20 a second \(bursts of 100\)`)
	dropped := func() (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range warns {
			if m := summary.FindStringSubmatch(w); m != nil {
				d, _ := strconv.Atoi(m[1])
				n += d
			}
		}
		return n
	}
	eventually(t, "all 5000 records kept or summarised", func() bool {
		mu.Lock()
		kept := counts["flood"]
		mu.Unlock()
		return kept+dropped() == 5000
	})
	elapsed := time.Since(begin)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	kept := counts["flood"]
	allowed := 100 + int(20*elapsed.Seconds()) + 1
	t.Logf("kept %d of 5000 records in %v (allowed %d), %d dropped in summaries", kept, elapsed.Round(time.Millisecond), allowed, 5000-kept)
	if kept > allowed || kept < 100 {
		t.Fatalf("the server's log got %d of the flood's records, want 100..%d", kept, allowed)
	}
	info := strings.Join(warns, "\n")
	if n := strings.Count(info, "logs too much"); n > int(elapsed/time.Second)+2 {
		t.Errorf("%d summary lines in %v:\n%s", n, elapsed, info)
	}
}

// TestIdlePluginSurvivesABusyMachine: both cores busy with other processes
// for 60 s (two CPU-burning children) do not kill or restart an idle
// plugin: killing is for a hang, not for a slow tick. The player stays
// connected and the plugin keeps answering.
func TestIdlePluginSurvivesABusyMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("60 s of busy cores")
	}
	path := testplugin.Build(t, "./examples/greeter")
	srv, _ := startHost(t, withModules(path))
	alice := dialAs(t, srv, "alice", greeterRegistry())
	waitStr(t, alice, 1001, "welcome alice, 1 here")
	var burners []*exec.Cmd
	for range 2 {
		b := exec.Command("sh", "-c", "while :; do :; done")
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		burners = append(burners, b)
	}
	stop := func() {
		for _, b := range burners {
			b.Process.Kill()
			b.Wait()
		}
		burners = nil
	}
	t.Cleanup(stop)
	start, t0 := srv.Stats().Ticks, time.Now()
	for i := 0; time.Since(t0) < 60*time.Second; i++ {
		time.Sleep(5 * time.Second)
		sendStr(t, alice, 1000, "still here "+strconv.Itoa(i))
		waitStr(t, alice, 1001, "alice: still here "+strconv.Itoa(i))
	}
	ticks, took := srv.Stats().Ticks-start, time.Since(t0)
	stop()
	info, _ := srv.Exec("module info greeter")
	t.Logf("60 s busy: %d ticks in %v (%.1f Hz); module info greeter:\n%s", ticks, took.Round(time.Millisecond), float64(ticks)/took.Seconds(), info)
	if !strings.Contains(info, "state running") || !strings.Contains(info, "restarts 0") || strings.Contains(info, "crashed") {
		t.Fatalf("the idle plugin did not survive the busy machine:\n%s", info)
	}
	select {
	case <-alice.Done():
		r, d := alice.CloseReason()
		t.Fatalf("the player was disconnected: %v %s", r, d)
	default:
	}
}

// TestSlowRestartDoesNotStallTheServer: a plugin that crashes and then takes
// 3 s to start again is prepared off the game thread; the server keeps
// ticking meanwhile, and the plugin is back afterwards.
func TestSlowRestartDoesNotStallTheServer(t *testing.T) {
	path := testplugin.Build(t, "./host/testdata/plugins/hostile")
	stall := filepath.Join(t.TempDir(), "stall")
	t.Setenv("HOSTILE_LOAD_STALL_FILE", stall) // the plugin process inherits it
	srv, _ := startHost(t, func(c *config.Config) {
		c.Modules.Load = []string{path}
		c.Modules.RestartBackoff = 0.1
	})
	c := dialAs(t, srv, "alice", hostileRegistry())
	if err := os.WriteFile(stall, []byte("3000"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Exec("hostile_exit"); err == nil {
		t.Fatal("hostile_exit answered")
	}
	eventually(t, "the background restart to begin", func() bool {
		info, _ := srv.Exec("module info hostile")
		return strings.Contains(info, "state restarting")
	})
	n, took := ticksOver(srv, 2*time.Second)
	hz := float64(n) / took.Seconds()
	t.Logf("while the plugin takes 3 s to start: %d ticks in %v = %.1f Hz", n, took.Round(time.Millisecond), hz)
	if hz < 50 {
		t.Fatalf("the server ran at %.1f Hz while a plugin restarted", hz)
	}
	eventually(t, "the plugin back", func() bool {
		info, _ := srv.Exec("module info hostile")
		return strings.Contains(info, "state running") && strings.Contains(info, "restarted (attempt ")
	})
	if err := c.Send(1300, wire.Reliable, []byte("back")); err != nil {
		t.Fatal(err)
	}
	if m := waitFor(t, c, 1301); string(m.Payload) != "back" {
		t.Fatalf("the restarted plugin answered %q", m.Payload)
	}
}
