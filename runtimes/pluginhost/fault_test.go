package pluginhost_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/runtimes/pluginhost"
)

const hostilePkg = "./host/testdata/plugins/hostile"

// poke is a message event of the hostile plugin carrying n.
func poke(n int) module.Event {
	return module.Event{Kind: module.EventMessage, Client: 1, Type: 1300, Payload: []byte(strconv.Itoa(n))}
}

// mustCommand runs a command of an idle plugin. A loaded machine may delay
// even an idle plugin's answer past the command wait: the commands used
// here are idempotent, so a busy answer is retried.
func mustCommand(t *testing.T, m *pluginhost.Module, line ...string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, err := m.Command(line[0], line[1:])
		if err == nil {
			return out
		}
		if !errors.Is(err, pluginhost.ErrBusy) || time.Now().After(deadline) {
			t.Fatalf("%v: %v", line, err)
		}
	}
}

// TestSlowPluginIsNotWaitedFor: a plugin that sleeps 200 ms every tick.
// No Step holds the caller longer than a little over the tick's wait; the
// events of the ticks it misses are held (Backlog) and reach it in order
// with its next call; its answers apply late; a window of tick time spent
// mostly behind is one fault, with the sentence the operator reads.
func TestSlowPluginIsNotWaitedFor(t *testing.T) {
	m, h, _ := start(t, hostilePkg, func(c *pluginhost.Config) { c.LateWindow = time.Second })
	if err := m.Step(tick(1), []module.Event{h.admit(1, "alice")}); err != nil {
		t.Fatal(err)
	}
	mustCommand(t, m, "hostile_sleep", "200")
	var slowest time.Duration
	maxBacklog := 0
	const ticks = 150 // 2.5 s of tick time, at 60 Hz of real time
	for n := 2; n < 2+ticks; n++ {
		begin := time.Now()
		if err := m.Step(fastTick(uint64(n)), []module.Event{poke(n)}); err != nil {
			t.Fatalf("tick %d: %v", n, err)
		}
		slowest = max(slowest, time.Since(begin))
		maxBacklog = max(maxBacklog, m.Backlog())
		time.Sleep(time.Second / 60)
	}
	// The wait is 4 ms; a busy machine may add scheduling delay, never a
	// 200 ms sleep.
	if slowest > 100*time.Millisecond {
		t.Errorf("the slowest Step held the game thread %v", slowest)
	}
	rs := m.RuntimeStats()
	t.Logf("slowest Step %v, %d answers late, %d ticks held, answer time %v, backlog up to %d, %d sends, faults %q",
		slowest, rs.LateAnswers, rs.HeldTicks, rs.AnswerTime, maxBacklog, len(h.sends), h.faults)
	if rs.HeldTicks < ticks/2 || rs.LateAnswers == 0 || rs.AnswerTime < 150*time.Millisecond || maxBacklog == 0 {
		t.Errorf("runtime stats %+v, backlog up to %d: the plugin's lateness is not shown", rs, maxBacklog)
	}
	if len(h.faults) == 0 || !strings.Contains(h.faults[0].Error(), "module hostile answered late for 1s (about ") ||
		!strings.Contains(h.faults[0].Error(), "ms per tick against a 16.7ms tick): it runs behind the server") {
		t.Errorf("faults %q: want one per window spent behind", h.faults)
	}
	if len(h.faults) > 3 {
		t.Errorf("%d faults for 2.5 s behind with 1 s windows", len(h.faults))
	}
	// Every poke was delivered, in order, late or not.
	// The command waits behind the sleeping tick: busy is a fine answer, the
	// plugin runs it all the same.
	if _, err := m.Command("hostile_sleep", []string{"0"}); err != nil && !errors.Is(err, pluginhost.ErrBusy) {
		t.Fatal(err)
	}
	for n, deadline := 2+ticks, time.Now().Add(10*time.Second); len(h.sends) < ticks && time.Now().Before(deadline); n++ {
		if err := m.Step(tick(uint64(n)), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second / 60)
	}
	if len(h.sends) != ticks {
		t.Fatalf("%d of %d pokes answered", len(h.sends), ticks)
	}
	for i, s := range h.sends {
		if want := `1:1301:"` + strconv.Itoa(i+2) + `"`; s != want {
			t.Fatalf("answer %d is %s, want %s: held events lost their order", i, s, want)
		}
	}
}

// TestOneSlowTickIsNoFault: a single 300 ms stall holds a few ticks and
// applies late, and costs no fault.
func TestOneSlowTickIsNoFault(t *testing.T) {
	m, h, _ := start(t, hostilePkg, func(c *pluginhost.Config) { c.LateWindow = time.Second })
	mustCommand(t, m, "hostile_stall", "300")
	for n := 1; n < 150; n++ {
		if err := m.Step(fastTick(uint64(n)), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second / 60)
	}
	if rs := m.RuntimeStats(); rs.HeldTicks == 0 || len(h.faults) != 0 {
		t.Fatalf("held %d ticks, faults %q: want some held ticks and no fault", rs.HeldTicks, h.faults)
	}
}

// TestCommandDoesNotBlockOnABusyPlugin: a command to a plugin whose tick
// runs long answers ErrBusy within about CommandWait; the real answer is
// logged once it comes.
func TestCommandDoesNotBlockOnABusyPlugin(t *testing.T) {
	var mu sync.Mutex
	var recs []string
	log := slog.New(recordHandler{mu: &mu, recs: &recs})
	m, _, _ := start(t, hostilePkg, func(c *pluginhost.Config) { c.Log = log })
	mustCommand(t, m, "hostile_stall", "1000")
	if err := m.Step(fastTick(1), nil); err != nil { // the stalled tick, left in flight
		t.Fatal(err)
	}
	begin := time.Now()
	_, err := m.Command("hostile_ticks", nil)
	if took := time.Since(begin); !errors.Is(err, pluginhost.ErrBusy) || took > time.Second/2 {
		t.Fatalf("command to a busy plugin: %v after %v; want ErrBusy after about 100ms", err, took)
	}
	t.Logf("busy command answered in %v: %v", time.Since(begin), err)
	found := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range recs {
			if strings.Contains(r, "module hostile answered command hostile_ticks late") && strings.Contains(r, "output=1") {
				return true
			}
		}
		return false
	}
	for n := uint64(2); !found(); n++ {
		if time.Since(begin) > 10*time.Second {
			t.Fatal("the late answer was never logged")
		}
		if err := m.Step(fastTick(n), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMemoryCap: a plugin that keeps allocating is killed at its cap with
// the reason, its process is gone, and its GOMEMLIMIT sat below the cap.
func TestMemoryCap(t *testing.T) {
	const limit = 64 << 20
	m, _, _ := start(t, hostilePkg, func(c *pluginhost.Config) { c.MemoryLimit = limit })
	if got := mustCommand(t, m, "hostile_memlimit"); got != strconv.Itoa(limit/4*3) {
		t.Errorf("GOMEMLIMIT in the plugin is %s, want %d", got, limit/4*3)
	}
	pid := m.Pid()
	if rs := m.RuntimeStats(); rs.MemoryLimit != limit {
		t.Errorf("memory limit shown %d", rs.MemoryLimit)
	}
	mustCommand(t, m, "hostile_eat", "4")
	err := stepUntilCrash(t, m, 1)
	t.Logf("crash: %v", err)
	if !errors.Is(err, module.ErrCrashed) || !strings.Contains(err.Error(), "exceeded its memory cap 64.0 MiB (resident ") {
		t.Fatalf("got %v, want a crash at the memory cap", err)
	}
	m.Unload()
	if syscall.Kill(pid, 0) == nil && alive(pid) {
		t.Fatalf("plugin %d still runs", pid)
	}
	assertNoZombies(t)
}

// TestLogFlood: a plugin that logs 2000 records and prints 2000 lines at
// once gets its burst and what its rate refills; the rest are dropped,
// counted and summarised.
func TestLogFlood(t *testing.T) {
	var mu sync.Mutex
	var recs []string
	log := slog.New(recordHandler{mu: &mu, recs: &recs})
	m, _, _ := start(t, hostilePkg, func(c *pluginhost.Config) {
		c.Log, c.LogLinesPerSecond, c.LogBurst = log, 10, 50
	})
	begin := time.Now()
	// Writing 2000 lines may take the plugin longer than a command's wait
	// (under -race): busy is a fine answer, the lines are written.
	for _, c := range []string{"hostile_flood", "hostile_print"} {
		if _, err := m.Command(c, []string{"2000"}); err != nil && !errors.Is(err, pluginhost.ErrBusy) {
			t.Fatal(err)
		}
	}
	// Until the plugin has answered both, and go-plugin's goroutines have
	// read the lines.
	for n, deadline := uint64(1), time.Now().Add(20*time.Second); ; n++ {
		if out, err := m.Command("hostile_ticks", nil); err == nil && out != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin never answered")
		}
		if err := m.Step(fastTick(n), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	dropped := m.RuntimeStats().LogDropped
	m.Unload() // waits for the log readers and summarises what is left
	elapsed := time.Since(begin)
	mu.Lock()
	defer mu.Unlock()
	var kept, summaries int
	var summarised uint64
	for _, r := range recs {
		switch {
		case strings.Contains(r, "INFO flood ") || strings.Contains(r, "INFO print "):
			kept++
		case strings.Contains(r, "WARN module hostile logs too much: "):
			summaries++
			i := strings.Index(r, " dropped=")
			n, _ := strconv.ParseUint(strings.Fields(r[i+len(" dropped="):])[0], 10, 64)
			summarised += n
		}
	}
	allowed := 50 + int(10*elapsed.Seconds()) + 1
	t.Logf("kept %d of 4000 lines (allowed %d in %v), %d summaries of %d dropped (%d counted before unload)", kept, allowed, elapsed, summaries, summarised, dropped)
	if kept > allowed || kept < 50 {
		t.Errorf("kept %d lines, want 50..%d", kept, allowed)
	}
	if summaries == 0 || summaries > int(elapsed/time.Second)+2 {
		t.Errorf("%d summary lines in %v", summaries, elapsed)
	}
	if summarised+uint64(kept) != 4000 {
		t.Errorf("kept %d + summarised %d != 4000 lines written", kept, summarised)
	}
}

// TestPanicApplyingAnActionIsAFault: the server's side of an action panics
// (a bug on this side of the boundary): the adapter recovers, reports a
// fault and goes on.
func TestPanicApplyingAnActionIsAFault(t *testing.T) {
	m, h, _ := start(t, hostilePkg, nil)
	h.onScore = func() { panic("scoreboard bug") }
	if _, err := m.Command("hostile_score", nil); err != nil {
		t.Fatalf("command: %v", err)
	}
	if len(h.faults) != 1 || !strings.Contains(h.faults[0].Error(), "panic applying the plugin's ACTION_SCORE action: scoreboard bug") {
		t.Fatalf("faults %q", h.faults)
	}
	if err := m.Step(tick(1), []module.Event{h.admit(1, "alice"), poke(7)}); err != nil {
		t.Fatal(err)
	}
	if len(h.sends) != 1 || h.sends[0] != `1:1301:"7"` {
		t.Fatalf("after the panic the plugin answered %q", h.sends)
	}
}

// TestNextTickAnswersApplyAtTheNextStep: with AnswerNextTick a Step sends
// its call and returns without waiting for it; the answer is applied at
// the start of the next Step, before that tick's call goes out, in order,
// and is not counted late.
func TestNextTickAnswersApplyAtTheNextStep(t *testing.T) {
	t.Run("config", func(t *testing.T) {
		m, h, _ := start(t, hostilePkg, func(c *pluginhost.Config) { c.AnswerNextTick = true })
		checkNextTick(t, m, h)
	})
	t.Run("manifest", func(t *testing.T) {
		t.Setenv("HOSTILE_NEXT_TICK", "1") // the plugin's manifest asks for it
		m, h, _ := start(t, hostilePkg, nil)
		checkNextTick(t, m, h)
	})
}

func checkNextTick(t *testing.T, m *pluginhost.Module, h *stubHost) {
	if err := m.Step(tick(1), []module.Event{h.admit(1, "alice")}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // as between any two ticks below
	waitAnswer(t, m, 1)
	const ticks = 30
	for n := 2; n < 2+ticks; n++ {
		if err := m.Step(tick(uint64(n)), []module.Event{poke(n)}); err != nil {
			t.Fatalf("tick %d: %v", n, err)
		}
		// Answered so far: the pokes of the ticks before this one.
		if got, want := len(h.sends), n-2; got != want {
			t.Fatalf("after tick %d: %d answers applied, want %d (each tick's at the next): %q", n, got, want, h.sends)
		}
		// As between two ticks, and then until the answer is in: the next
		// Step does not wait for it, and a busy machine (or -race) may
		// take longer than any fixed pause to carry it from the plugin's
		// process (which also runs at a lower priority).
		time.Sleep(20 * time.Millisecond)
		waitAnswer(t, m, n)
	}
	for i, s := range h.sends {
		if want := `1:1301:"` + strconv.Itoa(i+2) + `"`; s != want {
			t.Fatalf("answer %d is %s, want %s", i, s, want)
		}
	}
	if rs := m.RuntimeStats(); rs.LateAnswers != 0 {
		t.Errorf("%d answers counted late: an answer at the next tick is this mode's rule", rs.LateAnswers)
	}
}

// TestNextTickNeverWaitsForASlowPlugin: with AnswerNextTick a Step never
// waits for the plugin — not for this tick's answer, nor for the previous
// tick's — even when the tick's deadline would allow 10 s: a
// plugin that sleeps 30 ms a tick costs held ticks and late actions, not a
// long tick.
func TestNextTickNeverWaitsForASlowPlugin(t *testing.T) {
	m, h, _ := start(t, hostilePkg, func(c *pluginhost.Config) { c.AnswerNextTick = true })
	if err := m.Step(tick(1), []module.Event{h.admit(1, "alice")}); err != nil {
		t.Fatal(err)
	}
	mustCommand(t, m, "hostile_sleep", "30")
	const ticks = 40
	took := make([]time.Duration, 0, ticks)
	for n := 2; n < 2+ticks; n++ {
		begin := time.Now()
		if err := m.Step(tick(uint64(n)), []module.Event{poke(n)}); err != nil { // a 10 s deadline
			t.Fatalf("tick %d: %v", n, err)
		}
		took = append(took, time.Since(begin))
		time.Sleep(time.Second / 60)
	}
	slices.Sort(took)
	rs := m.RuntimeStats()
	t.Logf("Step took %v (median), %v (slowest); %d ticks held, answer time %v", took[ticks/2], took[ticks-1], rs.HeldTicks, rs.AnswerTime)
	if took[ticks/2] > 10*time.Millisecond {
		t.Errorf("the median Step took %v: it waited for a plugin that takes 30 ms", took[ticks/2])
	}
	if rs.HeldTicks == 0 {
		t.Errorf("no tick held: the plugin's lateness is not shown")
	}
	mustCommand(t, m, "hostile_sleep", "0")
	for n, deadline := 2+ticks, time.Now().Add(10*time.Second); len(h.sends) < ticks && time.Now().Before(deadline); n++ {
		if err := m.Step(tick(uint64(n)), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second / 60)
	}
	for i, s := range h.sends {
		if want := `1:1301:"` + strconv.Itoa(i+2) + `"`; s != want {
			t.Fatalf("answer %d is %s, want %s: held events lost their order", i, s, want)
		}
	}
	if len(h.sends) != ticks {
		t.Fatalf("%d of %d pokes answered", len(h.sends), ticks)
	}
}

// waitAnswer waits (10 s at most) until the answer to tick n's Step call
// has arrived, without taking it.
func waitAnswer(t *testing.T, m *pluginhost.Module, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !pluginhost.AnswerIn(m); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tick %d: no answer from the plugin within 10 s", n)
		}
	}
}

// TestNextTickStepNeverStopsForAnAnswer: with AnswerNextTick the game
// thread never blocks inside a Step for the plugin: an answer not in at
// the tick's start makes that tick a held tick at once, instead of a wait
// that on a busy core can last the kernel's whole wake-up delay. The same
// slow plugin under the default (same_tick) has its waits counted: the
// figure can tell the two apart.
func TestNextTickStepNeverStopsForAnAnswer(t *testing.T) {
	for _, nextTick := range []bool{true, false} {
		t.Run(fmt.Sprintf("next_tick=%v", nextTick), func(t *testing.T) {
			m, h, _ := start(t, hostilePkg, func(c *pluginhost.Config) { c.AnswerNextTick = nextTick })
			if err := m.Step(tick(1), []module.Event{h.admit(1, "alice")}); err != nil {
				t.Fatal(err)
			}
			if nextTick {
				waitAnswer(t, m, 1)
			}
			mustCommand(t, m, "hostile_sleep", "30")
			const ticks = 20
			for n := 2; n < 2+ticks; n++ {
				if err := m.Step(fastTick(uint64(n)), []module.Event{poke(n)}); err != nil {
					t.Fatalf("tick %d: %v", n, err)
				}
				time.Sleep(time.Second / 60)
			}
			rs := m.RuntimeStats()
			t.Logf("%d ticks held, %d late answers; the ticks waited %d times, %v in all", rs.HeldTicks, rs.LateAnswers, rs.TickWaits, rs.TickWaitTime)
			if rs.HeldTicks == 0 {
				t.Fatalf("no tick held behind a plugin that takes 30 ms a tick of 16.7 ms")
			}
			switch {
			case nextTick && (rs.TickWaits != 0 || rs.TickWaitTime != 0):
				t.Errorf("next_tick: the game thread stopped %d times (%v in all) to wait for an answer inside the tick", rs.TickWaits, rs.TickWaitTime)
			case !nextTick && (rs.TickWaits == 0 || rs.TickWaitTime <= 0):
				t.Errorf("same_tick: the tick's waits for the answer are not counted (%d, %v)", rs.TickWaits, rs.TickWaitTime)
			}
		})
	}
}

// TestStepWaitIsATraceRegion: in an execution trace, a same_tick Step's
// wait for the answer and the answer's application are regions.
func TestStepWaitIsATraceRegion(t *testing.T) {
	m, h, _ := start(t, hostilePkg, nil)
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("a trace is already running (go test -trace?): %v", err)
	}
	err := m.Step(tick(1), []module.Event{h.admit(1, "alice"), poke(1)})
	trace.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(h.sends) != 1 {
		t.Fatalf("the answer was not applied in its tick: %q", h.sends)
	}
	for _, r := range []string{pluginhost.RegionWait, pluginhost.RegionApply} {
		if !bytes.Contains(buf.Bytes(), []byte(r)) {
			t.Errorf("the trace of a Step has no region %q", r)
		}
	}
}
