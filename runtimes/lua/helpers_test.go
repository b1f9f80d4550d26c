package lua

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// sent is one message a module handed to the host.
type sent struct {
	Kind    string // "send", "broadcast", "except"
	Client  uint32 // the recipient (send) or the excluded client (except)
	Type    wire.MessageType
	Payload []byte
}

type logRecord struct {
	Level slog.Level
	Msg   string
}

// testHost is a module.Host that records what a module does.
type testHost struct {
	mu      sync.Mutex
	sends   []sent
	faults  []error
	logs    []logRecord
	kicks   []string
	scores  map[uint32][3]int32
	area    string
	kv      *mapKV
	clients map[uint32]module.ClientInfo
	server  module.ServerInfo
	sendErr error
	onFault func(error) // called after a fault is recorded

	// The entity world: a real Replicator whose sends are recorded as
	// "entity" sends.
	world *replicate.Replicator
	block replicate.Block
}

func newTestHost() *testHost {
	h := &testHost{
		scores:  make(map[uint32][3]int32),
		kv:      &mapKV{m: make(map[string]string)},
		clients: make(map[uint32]module.ClientInfo),
		server:  module.ServerInfo{Name: "test", Map: "arena", TickRate: 20, MaxPlayers: 16},
	}
	var err error
	h.world, err = replicate.New(replicate.Config{TickRate: 20, Rate: 20, Refresh: -1,
		Send: func(c uint32, t wire.MessageType, _ wire.Channel, p []byte) error {
			return h.record(sent{"entity", c, t, slices.Clone(p)})
		},
		RTT: func(c uint32) (time.Duration, bool) { return 0, true },
	})
	if err != nil {
		panic(err)
	}
	h.block, _ = h.world.ReserveBlock()
	return h
}

func (h *testHost) admit(id uint32, name string) {
	h.clients[id] = module.ClientInfo{ID: id, Name: name, Ping: 42 * time.Millisecond,
		Addr: netip.MustParseAddrPort("192.0.2.1:4000")}
}

func (h *testHost) record(s sent) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sends = append(h.sends, s)
	return h.sendErr
}

func (h *testHost) Send(c uint32, t wire.MessageType, p []byte) error {
	return h.record(sent{"send", c, t, p})
}
func (h *testHost) Broadcast(t wire.MessageType, p []byte) error {
	return h.record(sent{"broadcast", 0, t, p})
}
func (h *testHost) BroadcastExcept(c uint32, t wire.MessageType, p []byte) error {
	return h.record(sent{"except", c, t, p})
}
func (h *testHost) Kick(c uint32, detail string) error {
	h.kicks = append(h.kicks, fmt.Sprintf("%d:%s", c, detail))
	return nil
}
func (h *testHost) Log() *slog.Logger { return slog.New(&recordHandler{h: h}) }
func (h *testHost) Fault(err error) {
	h.mu.Lock()
	h.faults = append(h.faults, err)
	h.mu.Unlock()
	if h.onFault != nil {
		h.onFault(err)
	}
}
func (h *testHost) Client(id uint32) (module.ClientInfo, bool) {
	c, ok := h.clients[id]
	return c, ok
}
func (h *testHost) Clients() []module.ClientInfo {
	ids := slices.Sorted(maps.Keys(h.clients))
	out := make([]module.ClientInfo, 0, len(ids))
	for _, id := range ids {
		out = append(out, h.clients[id])
	}
	return out
}
func (h *testHost) Server() module.ServerInfo { return h.server }
func (h *testHost) SetArea(name string) error { h.area = name; return nil }

func (h *testHost) AddScore(c uint32, score, kills, deaths int32) {
	s := h.scores[c]
	h.scores[c] = [3]int32{s[0] + score, s[1] + kills, s[2] + deaths}
}
func (h *testHost) KV() (module.KV, error) {
	if h.kv == nil {
		return nil, errors.New("this test host has no kv store")
	}
	return h.kv, nil
}
func (h *testHost) SetMetric(string, float64) error            { return errors.New("test host: no metrics") }
func (h *testHost) AddMetric(string, float64) error            { return errors.New("test host: no metrics") }
func (h *testHost) Now() time.Time                             { return time.Time{} }
func (h *testHost) After(time.Duration, func()) module.TimerID { return 0 }
func (h *testHost) Every(time.Duration, func()) module.TimerID { return 0 }
func (h *testHost) Cancel(module.TimerID) bool                 { return false }

func (h *testHost) EntityIDs() module.IDRange { return h.block.Range() }
func (h *testHost) SpawnEntity(s module.Spawn) (uint32, error) {
	return h.world.Spawn(h.block, s)
}
func (h *testHost) DestroyEntity(id uint32) error { return h.world.Destroy(h.block, id) }
func (h *testHost) SetEntityPosition(id uint32, p wire.Vec3, teleport bool) error {
	return h.world.SetPosition(h.block, id, p, teleport)
}
func (h *testHost) SetEntityFields(id uint32, v ...gamemsg.FieldValue) error {
	return h.world.SetFields(h.block, id, v...)
}
func (h *testHost) SetEntityOwner(id, c uint32) error { return h.world.SetOwner(h.block, id, c) }
func (h *testHost) SetEntityParty(id, p uint32) error { return h.world.SetParty(h.block, id, p) }
func (h *testHost) SetClientView(c uint32, v module.ClientView) error {
	return h.world.SetClientView(c, v)
}
func (h *testHost) Raycast(c uint32, o, d wire.Vec3, max float32) (module.Hit, error) {
	return h.world.Raycast(h.block, c, o, d, max)
}

func (h *testHost) takeSends() []sent {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sends
	h.sends = nil
	return s
}

func (h *testHost) takeFaults() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.faults
	h.faults = nil
	return f
}

func (h *testHost) logText() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, r := range h.logs {
		fmt.Fprintf(&b, "%s %s\n", r.Level, r.Msg)
	}
	return b.String()
}

type recordHandler struct{ h *testHost }

func (r *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (r *recordHandler) Handle(_ context.Context, rec slog.Record) error {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	r.h.logs = append(r.h.logs, logRecord{rec.Level, rec.Message})
	return nil
}
func (r *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recordHandler) WithGroup(string) slog.Handler      { return r }

type mapKV struct {
	m      map[string]string
	setErr error
}

func (k *mapKV) Get(key string) (string, bool) { v, ok := k.m[key]; return v, ok }
func (k *mapKV) Set(key, v string) error {
	if k.setErr != nil {
		return k.setErr
	}
	k.m[key] = v
	return nil
}
func (k *mapKV) Delete(key string) error { delete(k.m, key); return nil }
func (k *mapKV) Keys() []string          { return slices.Collect(maps.Keys(k.m)) }

// harness is a loaded module, its host and a tick counter.
type harness struct {
	t      testing.TB
	m      *Module
	h      *testHost
	man    module.Manifest
	tick   uint64
	budget time.Duration
	dt     time.Duration
}

// load loads a script with cfg (Seed 1 unless set) and fails the test on
// an error.
func load(t testing.TB, path string, cfg Config) *harness {
	t.Helper()
	hs, err := tryLoad(t, path, cfg, newTestHost())
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return hs
}

func tryLoad(t testing.TB, path string, cfg Config, h *testHost) (*harness, error) {
	t.Helper()
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	m, err := New(path, cfg)
	if err != nil {
		return nil, err
	}
	man, err := m.Load(h)
	t.Cleanup(func() { _ = m.Unload() })
	return &harness{t: t, m: m, h: h, man: man, budget: 20 * time.Millisecond, dt: 50 * time.Millisecond}, err
}

// step runs one Step with the harness's budget and returns the faults it
// reported.
func (hs *harness) step(events ...module.Event) []error {
	hs.t.Helper()
	hs.tick++
	now := time.Now()
	err := hs.m.Step(module.Tick{Number: hs.tick, DT: hs.dt, Now: now, Deadline: now.Add(hs.budget)}, events)
	if err != nil {
		hs.t.Fatalf("Step %d: %v", hs.tick, err)
	}
	return hs.h.takeFaults()
}

// command runs a console command and fails the test on an error.
func (hs *harness) command(name string, args ...string) string {
	hs.t.Helper()
	out, err := hs.m.Command(name, args)
	if err != nil {
		hs.t.Fatalf("Command(%s %v): %v", name, args, err)
	}
	return out
}

// oneFault asserts exactly one fault of kind and returns it.
func oneFault(t *testing.T, faults []error, kind error) *Fault {
	t.Helper()
	if len(faults) != 1 {
		t.Fatalf("got %d faults, want 1: %v", len(faults), faults)
	}
	var f *Fault
	if !errors.As(faults[0], &f) {
		t.Fatalf("fault %v (%T) is not a *Fault", faults[0], faults[0])
	}
	if !errors.Is(f, kind) {
		t.Fatalf("fault %v: kind %v, want %v", f, f.Err, kind)
	}
	return f
}

func message(client uint32, t wire.MessageType, payload []byte) module.Event {
	return module.Event{Kind: module.EventMessage, Client: client, Type: t, Payload: payload}
}

// netString encodes a NetBuffer string.
func netString(s string) []byte {
	return append([]byte{byte(len(s)), byte(len(s) >> 8)}, s...)
}
