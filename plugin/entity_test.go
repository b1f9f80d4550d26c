package plugin

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/internal/pluginwire"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// tickModule runs the test's function in OnTick.
type tickModule struct {
	Base
	h      module.Host
	onTick func(h module.Host)
	inputs []gamemsg.ClientInput
}

func (m *tickModule) Manifest() module.Manifest {
	return module.Manifest{Name: "t", Inputs: true, EntityTypes: []module.EntityType{{
		ID: 9, Name: "unit", PositionField: "pos",
		Fields: []gamemsg.FieldSchema{{Name: "pos", Kind: gamemsg.KindVec3}, {Name: "hp", Kind: gamemsg.KindInt32}, {Name: "flag", Kind: gamemsg.KindBool}},
		Box:    module.AABB{Min: wire.Vec3{X: -0.5, Z: -0.5}, Max: wire.Vec3{X: 0.5, Y: 2, Z: 0.5}},
	}}}
}
func (m *tickModule) Load(h module.Host) error { m.h = h; return nil }
func (m *tickModule) OnTick(module.Tick) {
	if m.onTick != nil {
		m.onTick(m.h)
	}
}
func (m *tickModule) OnInput(_ module.ClientInfo, in gamemsg.ClientInput) {
	m.inputs = append(m.inputs, in)
}

const first = 3 << 24

func newTestRuntime(t *testing.T) (*runtime, *tickModule) {
	t.Helper()
	m := &tickModule{}
	r, err := newRuntime(m, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Init(context.Background(), &pluginv1.InitRequest{
		Server:        &pluginv1.ServerInfo{TickRate: 60, LagWindowNs: int64(time.Second)},
		EntityIdFirst: first, EntityIdLast: first | 0xFFFFFF,
	})
	if err != nil || resp.GetError() != "" {
		t.Fatal(err, resp.GetError())
	}
	if man := resp.GetManifest(); len(man.GetEntityTypes()) != 1 || !man.GetInputs() || man.GetEntityTypes()[0].GetBoxMax().GetY() != 2 {
		t.Fatalf("manifest %v", man)
	}
	return r, m
}

// step runs one Step at tick n (60 Hz) and returns its actions.
func step(t *testing.T, r *runtime, n int, events ...*pluginv1.Event) []*pluginv1.Action {
	t.Helper()
	now := time.Unix(1000, 0).Add(time.Duration(n) * time.Second / 60)
	resp, err := r.Step(context.Background(), &pluginv1.StepRequest{Tick: uint64(n), NowUnixNs: now.UnixNano(), Events: events})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetActions()
}

func TestSDKEntityActions(t *testing.T) {
	r, m := newTestRuntime(t)
	var a, b uint32
	m.onTick = func(h module.Host) {
		var err error
		if a, err = h.SpawnEntity(module.Spawn{Type: 9, Owner: 4}); err != nil {
			t.Fatal(err)
		}
		if b, err = h.SpawnEntity(module.Spawn{Type: 9, Position: wire.Vec3{X: 1}}); err != nil {
			t.Fatal(err)
		}
		h.SetEntityPosition(a, wire.Vec3{X: 1}, false)
		h.SetEntityFields(a, gamemsg.FieldValue{Index: 1, Kind: gamemsg.KindInt32, Int: 5})
		h.SetEntityPosition(a, wire.Vec3{X: 2}, true)
		h.SetEntityFields(a, gamemsg.FieldValue{Index: 1, Kind: gamemsg.KindInt32, Int: 6}, gamemsg.FieldValue{Index: 2, Kind: gamemsg.KindBool, Bool: true})
		h.SetEntityFields(b, gamemsg.FieldValue{Index: 1, Kind: gamemsg.KindInt32, Int: 1})
		h.DestroyEntity(b)
		if _, err := h.SpawnEntity(module.Spawn{Type: 8}); !errors.Is(err, ErrUnknownType) {
			t.Errorf("unknown type: %v", err)
		}
		if err := h.SetEntityFields(a, gamemsg.FieldValue{Index: 1, Kind: gamemsg.KindFloat}); !errors.Is(err, ErrBadField) {
			t.Errorf("wrong kind: %v", err)
		}
		if _, err := h.SpawnEntity(module.Spawn{Type: 9, ID: 5}); !errors.Is(err, ErrBadID) {
			t.Errorf("id outside the block: %v", err)
		}
		if err := h.SetEntityPosition(b, wire.Vec3{}, false); !errors.Is(err, ErrNoEntity) {
			t.Errorf("destroyed entity: %v", err)
		}
	}
	acts := step(t, r, 1)
	kinds := make([]pluginv1.ActionKind, len(acts))
	for i, a := range acts {
		kinds[i] = a.GetKind()
	}
	want := []pluginv1.ActionKind{pluginv1.ActionKind_ACTION_ENTITY_SPAWN, pluginv1.ActionKind_ACTION_ENTITY_SPAWN,
		pluginv1.ActionKind_ACTION_ENTITY_UPDATE, pluginv1.ActionKind_ACTION_ENTITY_UPDATE, pluginv1.ActionKind_ACTION_ENTITY_DESTROY}
	if len(kinds) != len(want) {
		t.Fatalf("actions %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("actions %v, want %v", kinds, want)
		}
	}
	if a != first || b != first+1 {
		t.Fatalf("ids %#x %#x", a, b)
	}
	up := acts[2]
	vals, err := pluginwire.ParseFieldValues(up.GetFields())
	if err != nil || up.GetEntity() != a || up.GetPosition().GetX() != 2 || !up.GetTeleport() ||
		len(vals) != 2 || vals[0].Int != 6 || !vals[1].Bool {
		t.Fatalf("merged update %v %+v %v", up, vals, err)
	}
	if vals, _ := pluginwire.ParseFieldValues(acts[3].GetFields()); acts[3].GetEntity() != b || len(vals) != 1 || vals[0].Int != 1 {
		t.Fatalf("the update before the destroy lost its fields: %v", acts[3])
	}
	if _, err := r.SpawnEntity(module.Spawn{Type: 9}); !errors.Is(err, ErrOutsideCallback) {
		t.Fatalf("outside a callback: %v", err)
	}
}

// The SDK's own lag-compensation history: a target moving at 30 units/s,
// a shooter with 200 ms ping hits where it saw the target, not where it is.
func TestSDKRaycastRewinds(t *testing.T) {
	r, m := newTestRuntime(t)
	admit := func(id uint32, ping time.Duration) *pluginv1.Event {
		return &pluginv1.Event{Kind: pluginv1.EventKind_EVENT_ADMITTED, Client: id, Info: &pluginv1.ClientInfo{Name: "p", PingNs: int64(ping)}}
	}
	var target uint32
	var x float32
	m.onTick = func(h module.Host) {
		if target == 0 {
			target, _ = h.SpawnEntity(module.Spawn{Type: 9, Owner: 2})
			h.SpawnEntity(module.Spawn{Type: 9, Owner: 1, Position: wire.Vec3{Z: -10}})
		}
		h.SetEntityPosition(target, wire.Vec3{X: x}, false)
		x += 0.5 // 30 units/s at 60 Hz
	}
	step(t, r, 1, admit(1, 200*time.Millisecond), admit(2, 0))
	for n := 2; n <= 120; n++ {
		step(t, r, n)
	}
	var seen, missed module.Hit
	var errSeen error
	m.onTick = func(h module.Host) {
		// The newest snapshot (tick 120) has the target at now; this tick
		// (121) minus 100 ms is tick 115, when it was 2.5 units behind.
		now := x - 0.5
		seen, errSeen = h.Raycast(1, wire.Vec3{X: now - 2.5, Y: 1, Z: -20}, wire.Vec3{Z: 1}, 50)
		missed, _ = h.Raycast(1, wire.Vec3{X: now, Y: 1, Z: -20}, wire.Vec3{Z: 1}, 50)
	}
	step(t, r, 121)
	if errSeen != nil || seen.Entity != target || missed.Entity != 0 {
		t.Fatalf("aimed where seen: %+v %v; aimed at now: %+v", seen, errSeen, missed)
	}
	// Inputs reach OnInput.
	in := gamemsg.ClientInput{InputSeq: 3, DT: 0.01}
	step(t, r, 122, &pluginv1.Event{Kind: pluginv1.EventKind_EVENT_INPUT, Client: 1, Payload: gamemsg.AppendClientInput(nil, &in)})
	if len(m.inputs) != 1 || m.inputs[0].InputSeq != 3 {
		t.Fatalf("inputs %+v", m.inputs)
	}
}

func TestInputsNeedAHandler(t *testing.T) {
	if _, err := newRuntime(inputsOnly{}, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a manifest subscribing to inputs without OnInput was accepted")
	}
}

type inputsOnly struct{ Base }

func (inputsOnly) Manifest() module.Manifest { return module.Manifest{Name: "x", Inputs: true} }
