package supervisor_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// t0 is where the tests' tick clock starts; only Tick.Now moves it.
var t0 = time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)

// fakePlugin stands in for the out-of-process runtime: every start is a new
// instance (a generation), and the test decides when a Step, a Command or a
// start reports a crash, as a plugin whose process died would.
type fakePlugin struct {
	manifest    module.Manifest
	crashStep   bool // the next Step reports ErrCrashed
	crashAlways bool // every Step reports ErrCrashed
	crashCmd    bool // the next Command reports ErrCrashed
	failStarts  int  // the next failStarts Loads fail
	starts      int  // instances created (the current generation)
	unloads     int
	seen        map[int][]module.Event // events each generation stepped over
}

func newFakePlugin(name string, types ...wire.MessageType) *fakePlugin {
	p := &fakePlugin{seen: map[int][]module.Event{}}
	p.manifest = module.Manifest{Name: name, Version: "1",
		Commands: []module.CommandSpec{{Name: name + "_ping", Help: "answers pong"}}}
	for _, id := range types {
		p.manifest.Messages = append(p.manifest.Messages, schema(id, wire.ClientToServer, wire.Reliable, 0, 8))
	}
	return p
}

func (p *fakePlugin) spec() supervisor.Spec {
	return supervisor.Spec{Source: "plugins/" + p.manifest.Name, Kind: "plugin", New: func() (module.Module, error) {
		p.starts++
		return &fakeInstance{p: p, gen: p.starts}, nil
	}}
}

var errExited = fmt.Errorf("plugin process exited: exit status 3: %w", module.ErrCrashed)

type fakeInstance struct {
	p   *fakePlugin
	gen int
}

func (i *fakeInstance) Load(module.Host) (module.Manifest, error) {
	if i.p.failStarts > 0 {
		i.p.failStarts--
		return module.Manifest{}, errors.New("handshake: plugin exited before serving")
	}
	return i.p.manifest, nil
}

func (i *fakeInstance) Step(_ module.Tick, events []module.Event) error {
	i.p.seen[i.gen] = append(i.p.seen[i.gen], events...)
	if i.p.crashStep || i.p.crashAlways {
		i.p.crashStep = false
		return errExited
	}
	return nil
}

func (i *fakeInstance) Command(string, []string) (string, error) {
	if i.p.crashCmd {
		i.p.crashCmd = false
		return "", errExited
	}
	return "pong", nil
}

func (i *fakeInstance) Unload() error { i.p.unloads++; return nil }

// admittedNames lists the names of the EventAdmitted a generation saw.
func (p *fakePlugin) admittedNames(gen int) []string {
	var names []string
	for _, ev := range p.seen[gen] {
		if ev.Kind == module.EventAdmitted {
			names = append(names, ev.Name)
		}
	}
	return names
}

// at runs one tick at tick time now.
func (r *rig) at(now time.Time) {
	r.tick++
	r.mgr.Step(module.Tick{Number: r.tick, DT: time.Second / 60, Now: now}, 50*time.Millisecond)
}

func (r *rig) status(name string) supervisor.Status {
	r.t.Helper()
	for _, st := range r.mgr.Modules() {
		if st.Name == name {
			return st
		}
	}
	r.t.Fatalf("module %s not listed", name)
	return supervisor.Status{}
}

// restartRig is a rig whose manager resolves `module load` to the plugins
// given and sends its Notify lines to *lines.
func restartRig(t *testing.T, lines *[]string, set func(*supervisor.Config), plugins ...*fakePlugin) *rig {
	return newRigWith(t, func(c *supervisor.Config) {
		c.Notify = func(line string) { *lines = append(*lines, line) }
		c.Resolve = func(name string) (supervisor.Spec, error) {
			for _, p := range plugins {
				if p.manifest.Name == name {
					return p.spec(), nil
				}
			}
			return supervisor.Spec{}, fmt.Errorf("no module %q", name)
		}
		if set != nil {
			set(c)
		}
	})
}

func (r *rig) mustExec(line string) string {
	r.t.Helper()
	out, err := r.cmds.Execute(line)
	if err != nil {
		r.t.Fatalf("%s: %v", line, err)
	}
	return out
}

func lastLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

func TestCrashDetachesAtOnceAndRestartsAfterBackoff(t *testing.T) {
	var lines []string
	p := newFakePlugin("echo", 1000)
	r := restartRig(t, &lines, nil, p)
	r.at(t0)
	r.mustExec("module load echo")
	r.mgr.ClientAdmitted(module.ClientInfo{ID: 7, Name: "alice"})
	r.at(t0.Add(16 * time.Millisecond))
	if got := p.admittedNames(1); len(got) != 1 || got[0] != "alice" {
		t.Fatalf("first instance admitted %v", got)
	}

	p.crashStep = true
	crashed := t0.Add(32 * time.Millisecond)
	r.at(crashed)
	st := r.status("echo")
	if st.State != supervisor.StateRestarting || !st.NextRestart.Equal(crashed.Add(time.Second)) {
		t.Fatalf("after the crash: state %s, next restart %v", st.State, st.NextRestart)
	}
	if _, _, ok := r.srv.Registry().Lookup(1000); ok {
		t.Error("a crashed module's type is still registered")
	}
	if _, err := r.cmds.Execute("echo_ping"); !errors.Is(err, admin.ErrUnknownCommand) {
		t.Errorf("a crashed module's command: %v", err)
	}
	if p.unloads != 1 {
		t.Errorf("Unload called %d times on the crashed instance, want 1 (the runtime reaps there)", p.unloads)
	}
	if want := "module echo crashed: plugin process exited: exit status 3; restarting in 1s"; lastLine(lines) != want {
		t.Errorf("notify %q\nwant   %q", lastLine(lines), want)
	}
	if list := r.mustExec("module list"); !strings.Contains(list, "echo 1 [plugin] restarting in 1s") {
		t.Errorf("module list: %s", list)
	}

	// Joins while restarting are greeted on restart; other events are dropped.
	r.mgr.ClientAdmitted(module.ClientInfo{ID: 8, Name: "bob"})
	r.mgr.MapChange("docks", 1)
	for now := crashed; now.Before(crashed.Add(time.Second)); now = now.Add(time.Second / 60) {
		r.at(now)
		if p.starts != 1 {
			t.Fatalf("restarted %v after the crash, before the 1s backoff", now.Sub(crashed))
		}
	}
	r.at(crashed.Add(time.Second))
	if p.starts != 2 || r.status("echo").State != supervisor.StateRunning {
		t.Fatalf("1s after the crash: %d starts, state %s", p.starts, r.status("echo").State)
	}
	if want := "module echo restarted (attempt 1)"; lastLine(lines) != want {
		t.Errorf("notify %q, want %q", lastLine(lines), want)
	}
	if got := p.admittedNames(2); len(got) != 2 || got[0] != "alice" || got[1] != "bob" {
		t.Errorf("restarted instance was greeted with %v in its first tick, want [alice bob]", got)
	}
	for _, ev := range p.seen[2] {
		if ev.Kind == module.EventMapChange {
			t.Error("an event queued while the module was down reached its successor")
		}
	}
	if _, _, ok := r.srv.Registry().Lookup(1000); !ok {
		t.Error("restarted module's type not registered")
	}
	if out := r.mustExec("echo_ping"); out != "pong" {
		t.Errorf("restarted module's command answered %q", out)
	}
	if st := r.status("echo"); st.Restarts != 1 || !st.NextRestart.IsZero() {
		t.Errorf("restarts %d, next restart %v", st.Restarts, st.NextRestart)
	}
}

func TestBackoffDoublesIsCappedAndResets(t *testing.T) {
	var lines []string
	p := newFakePlugin("echo", 1000)
	r := restartRig(t, &lines, func(c *supervisor.Config) {
		c.RestartBackoffMax = 4 * time.Second
		c.MaxRestarts = 100
	}, p)
	r.at(t0)
	r.mustExec("module load echo")
	p.crashAlways = true
	now := t0.Add(time.Second / 60)
	r.at(now) // crash 1
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second} {
		next := r.status("echo").NextRestart
		if got := next.Sub(now); got != want {
			t.Fatalf("backoff %d: %v, want %v", i+1, got, want)
		}
		starts := p.starts
		r.at(next.Add(-time.Millisecond))
		if p.starts != starts {
			t.Fatalf("backoff %d: restarted early", i+1)
		}
		now = next
		r.at(now) // restarts, and crashes in the same tick
		if p.starts != starts+1 || r.status("echo").State != supervisor.StateRestarting {
			t.Fatalf("backoff %d: starts %d, state %s", i+1, p.starts, r.status("echo").State)
		}
	}
	if want := "module echo crashed: plugin process exited: exit status 3; restarting in 4s"; lastLine(lines) != want {
		t.Errorf("notify %q, want %q", lastLine(lines), want)
	}

	// A module that ran RestartBackoffMax without crashing starts again at 1s.
	p.crashAlways = false
	now = r.status("echo").NextRestart
	r.at(now)
	now = now.Add(4 * time.Second)
	r.at(now)
	p.crashStep = true
	r.at(now)
	if got := r.status("echo").NextRestart.Sub(now); got != time.Second {
		t.Errorf("backoff after 4s of running: %v, want 1s", got)
	}
	st := r.status("echo")
	// 18 events happened (loaded, 9 crashes, 8 restarts); the last 16 are kept.
	if st.Restarts != 8 || len(st.Events) != 16 || st.Events[0].What != "restarted (attempt 1)" || st.Events[15].What != "crashed: plugin process exited: exit status 3" {
		t.Errorf("restarts %d, events %+v; want 8, the last 16", st.Restarts, st.Events)
	}
}

func TestTooManyCrashesFailUntilModuleLoad(t *testing.T) {
	var lines []string
	p := newFakePlugin("echo", 1000)
	r := restartRig(t, &lines, nil, p) // defaults: 5 crashes in 10 minutes
	r.at(t0)
	r.mustExec("module load echo")
	p.crashAlways = true
	r.at(t0) // crash 1
	for range 4 {
		r.at(r.status("echo").NextRestart) // restart, crash
	}
	st := r.status("echo")
	if st.State != supervisor.StateFailed || !st.NextRestart.IsZero() || p.starts != 5 {
		t.Fatalf("after 5 crashes: state %s, next restart %v, %d starts", st.State, st.NextRestart, p.starts)
	}
	want := "module echo crashed: plugin process exited: exit status 3; failed: too many crashes (5 in 10m0s); use module load echo to start it again"
	if lastLine(lines) != want {
		t.Errorf("notify %q\nwant   %q", lastLine(lines), want)
	}
	if _, _, ok := r.srv.Registry().Lookup(1000); ok {
		t.Error("failed module's type still registered")
	}
	r.at(t0.Add(time.Hour))
	if p.starts != 5 || r.status("echo").State != supervisor.StateFailed {
		t.Fatal("a failed module was restarted without an operator")
	}

	p.crashAlways = false
	if out := r.mustExec("module load echo"); out != "loaded echo" {
		t.Fatalf("module load: %q", out)
	}
	st = r.status("echo")
	if st.State != supervisor.StateRunning || st.Restarts != 0 || len(r.mgr.Modules()) != 1 {
		t.Fatalf("after module load: state %s, restarts %d, %d modules", st.State, st.Restarts, len(r.mgr.Modules()))
	}
	if _, _, ok := r.srv.Registry().Lookup(1000); !ok {
		t.Error("revived module's type not registered")
	}
	// Its crash history is forgotten: the next crash waits 1s again, and four
	// more crashes in the window leave it restarting, not failed.
	now := t0.Add(time.Hour)
	p.crashAlways = true
	r.at(now)
	if got := r.status("echo").NextRestart.Sub(now); got != time.Second {
		t.Errorf("first backoff after module load: %v", got)
	}
	for range 3 {
		r.at(r.status("echo").NextRestart)
	}
	if st := r.status("echo"); st.State != supervisor.StateRestarting {
		t.Errorf("4 crashes after module load: state %s, want restarting", st.State)
	}
	events := r.mustExec("module info echo")
	if !strings.Contains(events, "failed: too many crashes (5 in 10m0s); use module load\n  13:00:00.000 loaded") {
		t.Errorf("module info lacks the failure and the reload:\n%s", events)
	}
}

func TestCommandCrashDetachesLikeStep(t *testing.T) {
	var lines []string
	p := newFakePlugin("echo", 1000)
	r := restartRig(t, &lines, nil, p)
	r.at(t0)
	r.mustExec("module load echo")
	p.crashCmd = true
	_, err := r.cmds.Execute("echo_ping")
	if !errors.Is(err, module.ErrCrashed) || err.Error() != "module echo crashed: plugin process exited: exit status 3; restarting in 1s" {
		t.Fatalf("crashed command: %v", err)
	}
	if st := r.status("echo"); st.State != supervisor.StateRestarting || p.unloads != 1 {
		t.Fatalf("state %s, %d unloads", st.State, p.unloads)
	}
	if _, _, ok := r.srv.Registry().Lookup(1000); ok {
		t.Error("type still registered after a command crash")
	}
	r.at(t0.Add(999 * time.Millisecond))
	if p.starts != 1 {
		t.Fatal("restarted before the backoff")
	}
	r.at(t0.Add(time.Second))
	if r.status("echo").State != supervisor.StateRunning || r.mustExec("echo_ping") != "pong" {
		t.Error("not restarted 1s after the command crash")
	}
}

func TestFailedRestartCountsAndBacksOff(t *testing.T) {
	var lines []string
	p := newFakePlugin("echo", 1000)
	r := restartRig(t, &lines, nil, p)
	r.at(t0)
	r.mustExec("module load echo")
	p.crashStep, p.failStarts = true, 2
	r.at(t0) // crash 1: restart at +1s
	r.at(t0.Add(time.Second))
	want := "module echo restart failed: module plugins/echo failed to load: handshake: plugin exited before serving; retrying in 2s"
	if lastLine(lines) != want {
		t.Errorf("notify %q\nwant   %q", lastLine(lines), want)
	}
	if st := r.status("echo"); st.State != supervisor.StateRestarting || !st.NextRestart.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("after a failed restart: state %s, next %v", st.State, st.NextRestart)
	}
	r.at(t0.Add(3 * time.Second)) // fails again: 4s
	if got := r.status("echo").NextRestart; !got.Equal(t0.Add(7 * time.Second)) {
		t.Fatalf("after the second failed restart: next %v, want +7s", got.Sub(t0))
	}
	r.at(t0.Add(7 * time.Second))
	if st := r.status("echo"); st.State != supervisor.StateRunning || st.Restarts != 1 || lastLine(lines) != "module echo restarted (attempt 3)" {
		t.Fatalf("third attempt: state %s, restarts %d, notify %q", st.State, st.Restarts, lastLine(lines))
	}
	// The failed starts counted in the window: two more crashes make five.
	p.crashAlways = true
	r.at(t0.Add(7 * time.Second))
	r.at(r.status("echo").NextRestart)
	if st := r.status("echo"); st.State != supervisor.StateFailed {
		t.Errorf("after 3 crashes and 2 failed starts: state %s, want failed", st.State)
	}
}

// handlerLog is a Transport that remembers which message types have a handler.
type handlerLog struct {
	supervisor.Transport
	set map[wire.MessageType]bool
}

func (h *handlerLog) Handle(t wire.MessageType, fn netstack.Handler) {
	h.set[t] = fn != nil
	h.Transport.Handle(t, fn)
}

func TestRestartClashFailsAndUnloadLeavesTheNewOwnerAlone(t *testing.T) {
	var lines []string
	echo, thief := newFakePlugin("echo", 1000), newFakePlugin("thief", 1000)
	handlers := &handlerLog{set: map[wire.MessageType]bool{}}
	r := restartRig(t, &lines, func(c *supervisor.Config) {
		handlers.Transport = c.Transport
		c.Transport = handlers
	}, echo, thief)
	r.at(t0)
	r.mustExec("module load echo")
	echo.crashStep = true
	r.at(t0)
	// While echo is down its id is free, and another module may take it.
	r.mustExec("module load thief")
	r.at(t0.Add(time.Second))
	if st := r.status("echo"); st.State != supervisor.StateRestarting || !strings.Contains(st.LastError, "thief") {
		t.Fatalf("restart into a taken id: state %s, last error %q", st.State, st.LastError)
	}
	if !strings.HasPrefix(lastLine(lines), "module echo restart failed: ") || !strings.HasSuffix(lastLine(lines), "; retrying in 2s") {
		t.Errorf("notify %q", lastLine(lines))
	}
	if out := r.mustExec("module unload echo"); out != "unloaded echo" {
		t.Fatalf("unload of a restarting module: %q", out)
	}
	if !handlers.set[1000] {
		t.Error("unloading the restarting module removed the new owner's handler")
	}
	if _, owner, ok := r.srv.Registry().Lookup(1000); !ok || owner != "thief" {
		t.Errorf("type 1000 owned by %q (%v), want thief", owner, ok)
	}
	r.at(t0.Add(time.Hour))
	if echo.starts != 2 || len(r.mgr.Modules()) != 1 {
		t.Errorf("an unloaded module came back: %d starts, %d modules", echo.starts, len(r.mgr.Modules()))
	}
}

func TestReloadRestartsARestartingModuleNow(t *testing.T) {
	var lines []string
	p := newFakePlugin("echo", 1000)
	r := restartRig(t, &lines, nil, p)
	r.at(t0)
	r.mustExec("module load echo")
	p.crashStep = true
	r.at(t0)
	if out := r.mustExec("module reload echo"); out != "reloaded echo" {
		t.Fatalf("reload: %q", out)
	}
	if st := r.status("echo"); st.State != supervisor.StateRunning || st.Restarts != 1 || p.starts != 2 {
		t.Errorf("after reload of a restarting module: state %s, restarts %d, starts %d", st.State, st.Restarts, p.starts)
	}
}

func TestModuleInfoShowsRestartsAndEvents(t *testing.T) {
	var lines []string
	p := newFakePlugin("echo", 1000)
	r := restartRig(t, &lines, nil, p)
	r.at(t0)
	r.mustExec("module load echo")
	p.crashStep = true
	r.at(t0.Add(16 * time.Millisecond))
	r.at(t0.Add(516 * time.Millisecond))
	if info := r.mustExec("module info echo"); !strings.Contains(info, "state restarting in 500ms\n") {
		t.Errorf("module info while restarting:\n%s", info)
	}
	r.at(t0.Add(1016 * time.Millisecond))
	info := r.mustExec("module info echo")
	want := `state running
code hash 
message types 1
  1000 t1000 c2s reliable untyped 0..8 bytes
inbox 0/4096, drops 0, over the per-client limit 0
faults 0
restarts 1
last error plugin process exited: exit status 3
events
  12:00:00.000 loaded
  12:00:00.016 crashed: plugin process exited: exit status 3
  12:00:01.016 restarted (attempt 1)`
	if !strings.HasSuffix(info, want) {
		t.Errorf("module info:\n%s\nwant it to end with:\n%s", info, want)
	}
	if list := r.mustExec("module list"); list != "echo 1 [plugin] running inbox 0/4096 drops 0 faults 0 restarts 1" {
		t.Errorf("module list: %q", list)
	}
}

// TestGreetingsArePresentArrivalsAreNot: a client admitted after the module
// loaded — even before its first tick — arrives (Present unset); after a
// restart every client still there is greeted with Present set, and one
// admitted after the restart arrives again.
func TestGreetingsArePresentArrivalsAreNot(t *testing.T) {
	var lines []string
	p := newFakePlugin("echo", 1000)
	r := restartRig(t, &lines, nil, p)
	r.mustExec("module load echo")
	r.mgr.ClientAdmitted(module.ClientInfo{ID: 7, Name: "alice"})
	r.at(t0)
	if got := p.admittedPresence(1); got != "alice" {
		t.Fatalf("first instance, admitted before its first tick: %q, want alice (not present)", got)
	}
	p.crashStep = true
	r.at(t0.Add(16 * time.Millisecond))
	r.at(t0.Add(16*time.Millisecond + time.Second))
	r.mgr.ClientAdmitted(module.ClientInfo{ID: 8, Name: "bob"})
	r.at(t0.Add(32*time.Millisecond + time.Second))
	if got := p.admittedPresence(2); got != "alice(present) bob" {
		t.Fatalf("after the restart: %q, want \"alice(present) bob\"", got)
	}
}

// admittedPresence lists a generation's EventAdmitted as names, each
// marked "(present)" when the event greets a client already there.
func (p *fakePlugin) admittedPresence(gen int) string {
	var names []string
	for _, ev := range p.seen[gen] {
		if ev.Kind == module.EventAdmitted {
			if ev.Present {
				names = append(names, ev.Name+"(present)")
			} else {
				names = append(names, ev.Name)
			}
		}
	}
	return strings.Join(names, " ")
}
