package supervisor_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestConfiguredModuleThatDoesNotStartIsListedFailed: Start keeps a
// module whose start failed listed as failed, with its error, under its
// source's name; `module load NAME` starts it in its place.
func TestConfiguredModuleThatDoesNotStartIsListedFailed(t *testing.T) {
	r := newRig(t, 64)
	p := newFakePlugin("mmo", 1100)
	p.failStarts = 1
	if _, err := r.mgr.Start(p.spec()); err == nil {
		t.Fatal("a failing start reported no error")
	}
	mods := r.mgr.Modules()
	if len(mods) != 1 || mods[0].Name != "mmo" || mods[0].State != supervisor.StateFailed ||
		!strings.Contains(mods[0].LastError, "handshake: plugin exited before serving") {
		t.Fatalf("modules after a failed start: %+v", mods)
	}
	if list, _ := r.cmds.Execute("module list"); !strings.Contains(list, "mmo") || !strings.Contains(list, " failed ") {
		t.Errorf("module list: %q", list)
	}
	if info, _ := r.cmds.Execute("module info mmo"); !strings.Contains(info, "failed to start: ") {
		t.Errorf("module info: %q", info)
	}
	if _, _, ok := r.srv.Registry().Lookup(1100); ok {
		t.Error("a module that never started registered its types")
	}
	if out, err := r.cmds.Execute("module load mmo"); err != nil || out != "loaded mmo" {
		t.Fatalf("module load mmo: %q %v", out, err)
	}
	mods = r.mgr.Modules()
	if len(mods) != 1 || mods[0].State != supervisor.StateRunning {
		t.Fatalf("after module load: %+v", mods)
	}
	if info, _ := r.cmds.Execute("module info mmo"); !strings.Contains(info, "failed to start: ") || !strings.Contains(info, "loaded") {
		t.Errorf("the history is kept: %q", info)
	}
}

// TestFailedModuleTypesAreAbandoned: once a module fails for good (its
// restarts failed), its types are abandoned: the transport refuses them at
// once (wire.ErrTypeFailed) instead of holding messages for a restart that
// will not come; loading it again registers them.
func TestFailedModuleTypesAreAbandoned(t *testing.T) {
	r := newRigWith(t, func(c *supervisor.Config) {
		c.InboxCapacity, c.MaxRestarts, c.RestartBackoff, c.RestartBackoffMax = 64, 2, time.Second, time.Second
	})
	p := newFakePlugin("echo", 1100)
	if _, err := r.mgr.Load(p.spec()); err != nil {
		t.Fatal(err)
	}
	reg := r.srv.Registry()
	validate := func() error {
		return reg.Validate(wire.ClientToServer, &wire.Header{Type: 1100, Channel: wire.Reliable}, []byte{1})
	}
	now := time.Now()
	p.crashStep, p.failStarts = true, 10
	r.at(now) // crashed: restarting, its messages held
	if err := validate(); !errors.Is(err, wire.ErrTypeNotLoaded) {
		t.Fatalf("restarting: %v", err)
	}
	for i := 1; i <= 5 && r.mgr.Modules()[0].State != supervisor.StateFailed; i++ {
		r.at(now.Add(time.Duration(i) * 2 * time.Second))
	}
	if st := r.mgr.Modules()[0].State; st != supervisor.StateFailed {
		t.Fatalf("state %s after failed restarts", st)
	}
	if err := validate(); !errors.Is(err, wire.ErrTypeFailed) || wire.RefusalOf(err) != wire.RefusedNotLoaded {
		t.Fatalf("failed: %v", err)
	}
	p.failStarts = 0
	if out, err := r.cmds.Execute("module load echo"); err != nil {
		t.Fatalf("module load: %q %v", out, err)
	}
	if err := validate(); err != nil {
		t.Fatalf("loaded again: %v", err)
	}
}
