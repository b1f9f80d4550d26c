package supervisor_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// rig is a real transport on 127.0.0.1 with a manager, driven by the test as
// its game thread.
type rig struct {
	t    *testing.T
	srv  *netstack.Server
	mgr  *supervisor.Manager
	cmds *admin.Registry
	tick uint64
}

func newRig(t *testing.T, inbox int) *rig {
	t.Helper()
	return newRigWith(t, func(c *supervisor.Config) { c.InboxCapacity = inbox })
}

// newRigWith is newRig with the manager's Config adjusted by set.
func newRigWith(t *testing.T, set func(*supervisor.Config)) *rig {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	reg := gamemsg.NewRegistry()
	srv, err := netstack.NewServer(netstack.ServerConfig{Bind: "127.0.0.1", Identity: priv, Registry: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Close() })
	r := &rig{t: t, srv: srv, cmds: admin.NewRegistry()}
	cfg := supervisor.Config{
		Transport: srv, Commands: r.cmds, Log: slog.New(slog.DiscardHandler), DataDir: t.TempDir(),
		MaxFaults: 3, FaultWindow: time.Minute,
		// The tests send bursts between the ticks they run; the per-client
		// limit has a test of its own.
		ClientMessagesPerTick: 1 << 20,
	}
	set(&cfg)
	r.mgr = supervisor.NewManager(cfg)
	return r
}

func (r *rig) step() {
	r.tick++
	r.mgr.Step(module.Tick{Number: r.tick, DT: time.Second / 60, Now: time.Now()}, 50*time.Millisecond)
}

// stepUntil runs ticks until cond holds (10 s at most).
func (r *rig) stepUntil(what string, cond func() bool) {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		r.step()
		if cond() {
			return
		}
	}
	r.t.Fatalf("timed out waiting for %s", what)
}

func (r *rig) dial(name string, reg *wire.Registry) *netstack.Client {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: r.srv.Addr(), Name: name, Pin: r.srv.Pin(), Registry: reg})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	r.mgr.ClientAdmitted(module.ClientInfo{ID: c.ID(), Name: name})
	return c
}

func schema(id wire.MessageType, dir wire.Direction, ch wire.Channel, min, max uint32) wire.Schema {
	return wire.Schema{ID: id, Name: fmt.Sprintf("t%d", id), Direction: dir, Channel: ch, MinLen: min, MaxLen: max,
		StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true}
}

func spec(f *supervisor.Funcs) supervisor.Spec {
	return supervisor.Spec{Source: f.Manifest.Name, Kind: "go", New: func() (module.Module, error) { return f, nil }}
}

func clientRegistry(t *testing.T, schemas ...wire.Schema) *wire.Registry {
	reg := gamemsg.NewRegistry()
	for _, s := range schemas {
		if err := reg.Register("test", s); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestMessagesReachModuleInOrderAndRepliesReachClient(t *testing.T) {
	r := newRig(t, 0)
	req := schema(1000, wire.ClientToServer, wire.ReliableOrdered, 4, 4)
	rep := schema(1001, wire.ServerToClient, wire.Reliable, 4, 4)
	var got []uint32
	var admitted []string
	echo := &supervisor.Funcs{
		Manifest: module.Manifest{Name: "echo", Version: "1", Messages: []wire.Schema{req, rep}},
		OnEvent: func(h module.Host, ev *module.Event) {
			switch ev.Kind {
			case module.EventAdmitted:
				admitted = append(admitted, ev.Name)
			case module.EventMessage:
				n := uint32(ev.Payload[0]) | uint32(ev.Payload[1])<<8 | uint32(ev.Payload[2])<<16 | uint32(ev.Payload[3])<<24
				got = append(got, n)
				if err := h.Send(ev.Client, 1001, ev.Payload); err != nil {
					t.Errorf("send: %v", err)
				}
			}
		},
	}
	if _, err := r.mgr.Load(spec(echo)); err != nil {
		t.Fatal(err)
	}
	c := r.dial("alice", clientRegistry(t, req, rep))
	for i := range 100 {
		if err := c.Send(1000, wire.ReliableOrdered, []byte{byte(i), 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	}
	// A payload of the wrong size never reaches the module (schema first).
	c.Send(1000, wire.ReliableOrdered, []byte{1, 2, 3})
	r.stepUntil("100 messages", func() bool { return len(got) >= 100 })
	for i, n := range got {
		if n != uint32(i) {
			t.Fatalf("message %d carried %d: arrival order lost", i, n)
		}
	}
	if len(admitted) != 1 || admitted[0] != "alice" {
		t.Errorf("admitted events %v", admitted)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 100 {
		for {
			m, err := c.Receive(ctx)
			if err != nil {
				t.Fatalf("reply %d: %v", i, err)
			}
			if m.Header.Type == 1001 {
				break
			}
		}
	}
	if got := r.srv.Stats().MalformedDropped; got == 0 {
		t.Error("the 3-byte payload was not counted as malformed")
	}
}

func TestIDCollisionNamesBothAndUnloadFreesTypes(t *testing.T) {
	r := newRig(t, 0)
	a := &supervisor.Funcs{Manifest: module.Manifest{Name: "alpha", Messages: []wire.Schema{schema(1200, wire.BothDirections, wire.Reliable, 0, 10)}}}
	b := &supervisor.Funcs{Manifest: module.Manifest{Name: "beta", Messages: []wire.Schema{schema(1300, wire.BothDirections, wire.Reliable, 0, 10), schema(1200, wire.BothDirections, wire.Reliable, 0, 10)}}}
	if _, err := r.mgr.Load(spec(a)); err != nil {
		t.Fatal(err)
	}
	_, err := r.mgr.Load(spec(b))
	if err == nil || !strings.Contains(err.Error(), "alpha") || !strings.Contains(err.Error(), "beta") {
		t.Fatalf("collision error %v: must name both modules", err)
	}
	if _, _, ok := r.srv.Registry().Lookup(1300); ok {
		t.Error("a failed load left its other types registered")
	}
	if err := r.mgr.Unload("alpha"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := r.srv.Registry().Lookup(1200); ok {
		t.Error("unload left the type registered")
	}
	if _, err := r.mgr.Load(spec(b)); err != nil {
		t.Fatalf("after unload the id is free: %v", err)
	}
	if s, owner, ok := r.srv.Registry().Lookup(gamemsg.TypeChatMessage); !ok || owner != wire.BuiltinOwner || s.Channel != wire.Reliable {
		t.Error("built-in schema touched")
	}
}

func TestInboxOverflowDropsAndCountsWithoutHarm(t *testing.T) {
	r := newRig(t, 64)
	flood := schema(1400, wire.ClientToServer, wire.Unreliable, 1, 1200)
	other := schema(1401, wire.ClientToServer, wire.Reliable, 1, 8)
	var floodSeen, otherSeen int
	fm := &supervisor.Funcs{Manifest: module.Manifest{Name: "flooded", Messages: []wire.Schema{flood}},
		OnEvent: func(h module.Host, ev *module.Event) {
			if ev.Kind == module.EventMessage {
				floodSeen++
			}
		}}
	om := &supervisor.Funcs{Manifest: module.Manifest{Name: "other", Messages: []wire.Schema{other}},
		OnEvent: func(h module.Host, ev *module.Event) {
			if ev.Kind == module.EventMessage {
				otherSeen++
			}
		}}
	for _, f := range []*supervisor.Funcs{fm, om} {
		if _, err := r.mgr.Load(spec(f)); err != nil {
			t.Fatal(err)
		}
	}
	c := r.dial("flooder", clientRegistry(t, flood, other))
	payload := make([]byte, 1000)
	// No ticks run while the flood arrives: the inbox (64) must overflow.
	for range 2000 {
		c.Send(1400, wire.Unreliable, payload)
	}
	for i := range 10 {
		c.Send(1401, wire.Reliable, []byte{byte(i)})
	}
	// The counters are read while the flood may still be arriving: the
	// module's drops, the transport's, the module's again. Each drop adds
	// to the module's counter first, so the three agree only once no drop
	// happened between the reads — then they prove the transport counted
	// exactly the module's drops. No sleep decides anything: the loop ends
	// when the flood has (generous deadline for a busy machine).
	var st supervisor.Status
	var transport uint64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		first := r.status("flooded")
		transport = r.srv.Stats().InboxDrops
		st = r.status("flooded")
		if first.InboxDrops == transport && transport == st.InboxDrops && st.InboxDrops > 0 && r.status("other").InboxDepth == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("module drops %d, transport %d, then %d; other's inbox %d of 10: the counters never agreed",
				first.InboxDrops, transport, st.InboxDrops, r.status("other").InboxDepth)
		}
	}
	if st.InboxDepth > 64 {
		t.Fatalf("inbox depth %d (cap 64): overflow not bounded", st.InboxDepth)
	}
	r.stepUntil("the other module's 10 messages", func() bool { return otherSeen == 10 })
	if floodSeen > 64 {
		t.Errorf("flooded module saw %d messages from a 64-event inbox in one tick", floodSeen)
	}
}

func TestFaultsUnloadModuleAndAdminCommands(t *testing.T) {
	r := newRig(t, 0)
	bad := &supervisor.Funcs{
		Manifest: module.Manifest{Name: "flaky", Version: "0.1", Messages: []wire.Schema{schema(1500, wire.ClientToServer, wire.Reliable, 0, 4)},
			Commands: []module.CommandSpec{{Name: "flaky_ping", Help: "answers pong"}}},
		OnTick:    func(h module.Host, t module.Tick) { h.Fault(errors.New("script.lua:3: boom")) },
		OnCommand: func(h module.Host, name string, args []string) (string, error) { return "pong", nil },
	}
	if _, err := r.mgr.Load(spec(bad)); err != nil {
		t.Fatal(err)
	}
	if out, err := r.cmds.Execute("flaky_ping"); err != nil || out != "pong" {
		t.Fatalf("module command: %q %v", out, err)
	}
	out, _ := r.cmds.Execute("module info flaky")
	if !strings.Contains(out, "version 0.1") || !strings.Contains(out, "state running") {
		t.Errorf("module info:\n%s", out)
	}
	for range 5 {
		r.step()
	}
	list, _ := r.cmds.Execute("module list")
	if !strings.Contains(list, "flaky 0.1 [go] failed") {
		t.Errorf("module list after 3 faults:\n%s", list)
	}
	if _, _, ok := r.srv.Registry().Lookup(1500); ok {
		t.Error("failed module's types still registered")
	}
	if _, err := r.cmds.Execute("flaky_ping"); err == nil {
		t.Error("failed module's command still registered")
	}
	info, _ := r.cmds.Execute("module info flaky")
	if !strings.Contains(info, "last error script.lua:3: boom") {
		t.Errorf("module info lacks the last error:\n%s", info)
	}
	if _, err := r.cmds.Execute("module unload nope"); err == nil {
		t.Error("unloading an unknown module succeeded")
	}
}

// carrier is a Funcs with state carried across reloads.
type carrier struct {
	supervisor.Funcs
	state []byte
	fail  bool
}

func (c *carrier) SaveState() ([]byte, error) { return c.state, nil }
func (c *carrier) RestoreState(b []byte) error {
	c.state = append([]byte("restored:"), b...)
	return nil
}

func TestReloadCarriesStateAndFailedReloadKeepsOld(t *testing.T) {
	r := newRig(t, 0)
	gen := 0
	var last *carrier
	s := supervisor.Spec{Source: "counter", Kind: "go", New: func() (module.Module, error) {
		gen++
		if gen == 3 {
			return nil, errors.New("syntax error near line 7")
		}
		c := &carrier{state: []byte(fmt.Sprintf("gen%d", gen))}
		c.Manifest = module.Manifest{Name: "counter", Version: fmt.Sprint(gen)}
		last = c
		return c, nil
	}}
	if _, err := r.mgr.Load(s); err != nil {
		t.Fatal(err)
	}
	if err := r.mgr.Reload("counter"); err != nil {
		t.Fatal(err)
	}
	if string(last.state) != "restored:gen1" {
		t.Errorf("state after reload %q", last.state)
	}
	err := r.mgr.Reload("counter")
	if err == nil || !strings.Contains(err.Error(), "old version keeps running") {
		t.Fatalf("failed reload: %v", err)
	}
	if st := r.mgr.Modules()[0]; st.Version != "2" || st.State != supervisor.StateRunning {
		t.Errorf("after failed reload: version %s state %s", st.Version, st.State)
	}
}

func TestKVPersists(t *testing.T) {
	r := newRig(t, 0)
	var h module.Host
	f := &supervisor.Funcs{Manifest: module.Manifest{Name: "store"}, OnLoad: func(hh module.Host) error { h = hh; return nil }}
	if _, err := r.mgr.Load(spec(f)); err != nil {
		t.Fatal(err)
	}
	kv, err := h.KV()
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Set("best", "42"); err != nil {
		t.Fatal(err)
	}
	r.mgr.Unload("store")
	f2 := &supervisor.Funcs{Manifest: module.Manifest{Name: "store"}, OnLoad: func(hh module.Host) error { h = hh; return nil }}
	if _, err := r.mgr.Load(spec(f2)); err != nil {
		t.Fatal(err)
	}
	kv, err = h.KV()
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := kv.Get("best"); !ok || v != "42" {
		t.Errorf("kv after reload: %q %v", v, ok)
	}
}

// behind is a module that reports a backlog, as Lua does when its budget
// runs out.
type behind struct {
	supervisor.Funcs
	backlog int
}

func (b *behind) Backlog() int { return b.backlog }

func TestManagerTakesNoMoreThanTheModuleCanHold(t *testing.T) {
	r := newRig(t, 64)
	s := schema(1600, wire.ClientToServer, wire.Reliable, 1, 4)
	seen := 0
	b := &behind{backlog: 60}
	b.Manifest = module.Manifest{Name: "behind", Messages: []wire.Schema{s}}
	b.OnEvent = func(h module.Host, ev *module.Event) {
		if ev.Kind == module.EventMessage {
			seen++
		}
	}
	if _, err := r.mgr.Load(supervisor.Spec{Source: "behind", Kind: "go", New: func() (module.Module, error) { return b, nil }}); err != nil {
		t.Fatal(err)
	}
	c := r.dial("p", clientRegistry(t, s))
	for i := range 10 {
		c.Send(1600, wire.Reliable, []byte{byte(i)})
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.mgr.Modules()[0].InboxDepth < 10 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r.step()
	if seen != 4 {
		t.Fatalf("a module with 60 of 64 events pending was given %d, want 4", seen)
	}
	b.backlog = 0
	r.step()
	if seen != 10 {
		t.Fatalf("after the backlog cleared: %d of 10", seen)
	}
}
