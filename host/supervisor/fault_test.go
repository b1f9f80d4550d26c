package supervisor_test

import (
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/runtimes/pluginhost"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testplugin.Cleanup()
	os.Exit(code)
}

// panicky is an in-process module whose calls panic on request.
type panicky struct {
	supervisor.Funcs
	save bool // SaveState panics
}

func (p *panicky) SaveState() ([]byte, error) {
	if p.save {
		panic("save_state bug")
	}
	return nil, nil
}
func (p *panicky) RestoreState([]byte) error { return nil }

// TestPanicsAreFaultsNotCrashes: a panic in Step, in a console command, in
// a timer callback, in Unload and in SaveState is recovered, counted as a
// fault and a panic, and shown by `module info`; the module keeps running
// until its faults reach the limit. A panic in Load or in the factory is a
// failed load with the panic's value.
func TestPanicsAreFaultsNotCrashes(t *testing.T) {
	r := newRigWith(t, func(c *supervisor.Config) { c.MaxFaults = 5 })
	var h module.Host
	panicTick, ticks, timerRan := false, 0, 0
	p := &panicky{}
	p.Manifest = module.Manifest{Name: "panicky", Version: "1", Commands: []module.CommandSpec{{Name: "panicky_boom"}}}
	p.OnLoad = func(hh module.Host) error { h = hh; return nil }
	p.OnTick = func(module.Host, module.Tick) {
		ticks++
		if panicTick {
			panicTick = false
			panic("tick bug")
		}
	}
	p.OnCommand = func(module.Host, string, []string) (string, error) { panic("command bug") }
	p.OnUnload = func() { panic("unload bug") }
	gen := 0
	spec := supervisor.Spec{Source: "panicky", Kind: "go", New: func() (module.Module, error) { gen++; return p, nil }}
	if _, err := r.mgr.Load(spec); err != nil {
		t.Fatal(err)
	}
	info := func() string { out, _ := r.cmds.Execute("module info panicky"); return out }

	panicTick = true
	r.step()
	if st := r.status("panicky"); st.State != supervisor.StateRunning || st.Faults != 1 || st.Panics != 1 || !strings.Contains(st.LastError, "panic in Step: tick bug") {
		t.Fatalf("after a panicking tick: %+v", st)
	}
	r.step()
	if ticks != 2 {
		t.Fatalf("%d ticks ran: the module stopped after its panic", ticks)
	}

	_, err := r.cmds.Execute("panicky_boom")
	if !errors.Is(err, supervisor.ErrPanic) || !strings.Contains(err.Error(), "module panicky: panic in command panicky_boom: command bug") {
		t.Fatalf("panicking command: %v", err)
	}

	fired := false
	h.After(0, func() { fired = true; panic("timer bug") })
	h.After(0, func() { timerRan++ }) // the next timer still runs
	r.step()
	if !fired || timerRan != 1 || ticks != 3 {
		t.Fatalf("timers: fired %v, the next ran %d times, ticks %d", fired, timerRan, ticks)
	}

	p.save = true
	if err := r.mgr.Reload("panicky"); err != nil { // SaveState panics: reloads without state
		t.Fatalf("reload with a panicking save_state: %v", err)
	}
	// Unload of the old instance panicked too (a fault of the old code,
	// forgotten with the rest: the fresh code starts with a clean record).
	if out := info(); !strings.Contains(out, "state running") {
		t.Fatalf("after reload:\n%s", out)
	}
	if err := r.mgr.Unload("panicky"); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		spec supervisor.Spec
		want string
	}{
		{"load", supervisor.Spec{Source: "bad-load", Kind: "go", New: func() (module.Module, error) {
			return &supervisor.Funcs{Manifest: module.Manifest{Name: "bad"}, OnLoad: func(module.Host) error { panic("load bug") }}, nil
		}}, "module bad-load failed to load: panic in Load: load bug"},
		{"factory", supervisor.Spec{Source: "bad-factory", Kind: "go", New: func() (module.Module, error) { panic("factory bug") }},
			"module bad-factory: panic in the module's factory: factory bug"},
	} {
		_, err := r.mgr.Load(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestPanickingModuleFailsAtTheFaultLimit: panics count like other faults.
func TestPanickingModuleFailsAtTheFaultLimit(t *testing.T) {
	r := newRig(t, 0) // MaxFaults 3
	f := &supervisor.Funcs{Manifest: module.Manifest{Name: "boom"}, OnTick: func(module.Host, module.Tick) { panic("every tick") }}
	if _, err := r.mgr.Load(spec(f)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.step()
	}
	if st := r.status("boom"); st.State != supervisor.StateFailed || st.Panics != 3 {
		t.Fatalf("after 3 panicking ticks: state %s panics %d", st.State, st.Panics)
	}
}

// TestReloadForgetsFaults: faults count again from zero after a successful
// reload, so faults of the old code cannot fail the new one.
func TestReloadForgetsFaults(t *testing.T) {
	r := newRig(t, 0) // MaxFaults 3
	var h module.Host
	f := &supervisor.Funcs{Manifest: module.Manifest{Name: "flaky"}, OnLoad: func(hh module.Host) error { h = hh; return nil }}
	if _, err := r.mgr.Load(spec(f)); err != nil {
		t.Fatal(err)
	}
	h.Fault(errors.New("one"))
	h.Fault(errors.New("two"))
	if err := r.mgr.Reload("flaky"); err != nil {
		t.Fatal(err)
	}
	if st := r.status("flaky"); st.Faults != 0 || st.LastError != "" {
		t.Fatalf("after reload: faults %d, last error %q", st.Faults, st.LastError)
	}
	h.Fault(errors.New("three"))
	h.Fault(errors.New("four"))
	r.step()
	if st := r.status("flaky"); st.State != supervisor.StateRunning || st.Faults != 2 {
		t.Fatalf("two faults after the reload: state %s faults %d", st.State, st.Faults)
	}
}

// TestModuleLoadByNameAfterLoadByPath: a module first loaded by a path
// that failed comes back with `module load NAME`, though NAME alone
// resolves to nothing.
func TestModuleLoadByNameAfterLoadByPath(t *testing.T) {
	var h module.Host
	starts := 0
	path := supervisor.Spec{Source: "/opt/mods/scores.lua", Kind: "lua", New: func() (module.Module, error) {
		starts++
		return &supervisor.Funcs{Manifest: module.Manifest{Name: "scores"}, OnLoad: func(hh module.Host) error { h = hh; return nil }}, nil
	}}
	r := newRigWith(t, func(c *supervisor.Config) {
		c.Resolve = func(arg string) (supervisor.Spec, error) {
			if arg == path.Source {
				return path, nil
			}
			return supervisor.Spec{}, errors.New("unknown module " + arg)
		}
	})
	if out, err := r.cmds.Execute("module load /opt/mods/scores.lua"); err != nil || out != "loaded scores" {
		t.Fatalf("load by path: %q %v", out, err)
	}
	for range 3 {
		h.Fault(errors.New("bad"))
	}
	r.step()
	if st := r.status("scores"); st.State != supervisor.StateFailed {
		t.Fatalf("state %s, want failed", st.State)
	}
	if out, err := r.cmds.Execute("module load scores"); err != nil || out != "loaded scores" || starts != 2 {
		t.Fatalf("module load scores: %q %v (starts %d)", out, err, starts)
	}
	if st := r.status("scores"); st.State != supervisor.StateRunning || st.Source != "/opt/mods/scores.lua" || st.Faults != 0 {
		t.Fatalf("after module load by name: %+v", st)
	}
}

// TestClientMessageQuota: a client gets at most ClientMessagesPerTick
// messages into the module inboxes per tick, all modules together; the
// rest are dropped and counted per module and server-wide, and the next
// tick the client has its full quota again.
func TestClientMessageQuota(t *testing.T) {
	r := newRigWith(t, func(c *supervisor.Config) { c.ClientMessagesPerTick = 5 })
	a := schema(1700, wire.ClientToServer, wire.Reliable, 1, 4)
	b := schema(1701, wire.ClientToServer, wire.Reliable, 1, 4)
	seen := map[string]int{}
	count := func(name string) func(module.Host, *module.Event) {
		return func(_ module.Host, ev *module.Event) {
			if ev.Kind == module.EventMessage {
				seen[name]++
			}
		}
	}
	for _, f := range []*supervisor.Funcs{
		{Manifest: module.Manifest{Name: "a", Messages: []wire.Schema{a}}, OnEvent: count("a")},
		{Manifest: module.Manifest{Name: "b", Messages: []wire.Schema{b}}, OnEvent: count("b")},
	} {
		if _, err := r.mgr.Load(spec(f)); err != nil {
			t.Fatal(err)
		}
	}
	c := r.dial("spammer", clientRegistry(t, a, b))
	for i := range 12 {
		c.Send(1700, wire.Reliable, []byte{byte(i)})
	}
	for i := range 8 {
		c.Send(1701, wire.Reliable, []byte{byte(i)})
	}
	// No tick runs until the network side has taken all 20 (reliable:
	// each arrives once): delivered or over the limit.
	arrived := func() (in, over uint64) {
		for _, name := range []string{"a", "b"} {
			st := r.status(name)
			in += uint64(st.InboxDepth)
			over += st.OverLimit
		}
		return in, over
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if in, over := arrived(); in+over == 20 {
			break
		}
		if time.Now().After(deadline) {
			in, over := arrived()
			t.Fatalf("%d delivered + %d over the limit of 20 sent", in, over)
		}
	}
	in, over := arrived()
	if in != 5 || over != 15 || r.mgr.MessagesOverLimit() != 15 {
		t.Fatalf("in one tick: %d delivered, %d over (server-wide %d); want 5 and 15", in, over, r.mgr.MessagesOverLimit())
	}
	r.step()
	if seen["a"]+seen["b"] != 5 {
		t.Fatalf("modules saw %v", seen)
	}
	info, _ := r.cmds.Execute("module info a")
	if !strings.Contains(info, "over the per-client limit ") {
		t.Errorf("module info a:\n%s", info)
	}
	// A new tick, a new quota.
	for i := range 3 {
		c.Send(1701, wire.Reliable, []byte{byte(i)})
	}
	r.stepUntil("three more messages", func() bool { return seen["a"]+seen["b"] == 8 })
	if r.mgr.MessagesOverLimit() != 15 {
		t.Errorf("over the limit %d after a tick within it", r.mgr.MessagesOverLimit())
	}
}

// TestGuardedStepAllocatesNothing: the recover around every call costs no
// allocation per tick.
func TestGuardedStepAllocatesNothing(t *testing.T) {
	r := newRig(t, 0)
	f := &supervisor.Funcs{Manifest: module.Manifest{Name: "idle"}, OnTick: func(module.Host, module.Tick) {}}
	if _, err := r.mgr.Load(spec(f)); err != nil {
		t.Fatal(err)
	}
	r.step()
	tk := module.Tick{Number: 1, DT: time.Second / 60, Now: time.Now()}
	if n := testing.AllocsPerRun(100, func() { r.mgr.Step(tk, time.Millisecond) }); n != 0 {
		t.Errorf("Step allocates %.1f times a tick", n)
	}
}

// TestPanicInAPluginActionIsAFault: a real plugin process sends an action
// whose carrying-out panics on the server's side (here the scoreboard):
// the adapter recovers it, the manager counts the fault, the module runs on.
func TestPanicInAPluginActionIsAFault(t *testing.T) {
	path := testplugin.Build(t, "./host/testdata/plugins/hostile")
	r := newRigWith(t, func(c *supervisor.Config) {
		c.AddScore = func(uint32, int32, int32, int32) { panic("scoreboard bug") }
	})
	s := supervisor.Spec{Source: path, Kind: "plugin", New: func() (module.Module, error) {
		return pluginhost.New(pluginhost.Config{Path: path, Log: slog.New(slog.DiscardHandler)})
	}}
	if _, err := r.mgr.Load(s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.mgr.UnloadAll)
	// A loaded machine may delay the answer past the command wait: then it
	// is applied at a later tick.
	if out, err := r.cmds.Execute("hostile_score"); errors.Is(err, pluginhost.ErrBusy) {
		r.stepUntil("the late answer", func() bool { return r.status("hostile").Faults > 0 })
	} else if err != nil || out != "ok" {
		t.Fatalf("hostile_score: %q %v", out, err)
	}
	st := r.status("hostile")
	if st.State != supervisor.StateRunning || st.Faults != 1 || !strings.Contains(st.LastError, "panic applying the plugin's ACTION_SCORE action: scoreboard bug") {
		t.Fatalf("after the panicking action: state %s faults %d last %q", st.State, st.Faults, st.LastError)
	}
	var out string
	r.stepUntil("an answer to hostile_ticks", func() bool {
		o, err := r.cmds.Execute("hostile_ticks")
		out = o
		return err == nil
	})
	if _, err := strconv.Atoi(out); err != nil {
		t.Fatalf("the plugin answered %q", out)
	}
}
