package plugin

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

type metricsModule struct{ Base }

func (metricsModule) Manifest() module.Manifest {
	return module.Manifest{Name: "m", Version: "1", Metrics: []module.MetricSpec{
		{Name: "kills_total", Kind: module.MetricCounter}, {Name: "players", Kind: module.MetricGauge},
	}}
}

func TestMetrics(t *testing.T) {
	r, err := newRuntime(metricsModule{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetMetric("players", 1); !errors.Is(err, ErrOutsideCallback) {
		t.Errorf("outside a callback: %v", err)
	}
	r.inCall.Store(true)
	if err := r.AddMetric("kills_total", 2); err != nil {
		t.Fatal(err)
	}
	if err := r.SetMetric("kills_total", 1); err == nil {
		t.Error("a counter went down")
	}
	if err := r.SetMetric("deaths_total", 1); !errors.Is(err, ErrUnknownMetric) {
		t.Errorf("undeclared metric: %v", err)
	}
	first := r.metricUpdates()
	if len(first) != 2 || first[0].GetValue() != 2 || first[1].GetValue() != 0 {
		t.Errorf("first answer carries %v, want every metric", first)
	}
	if more := r.metricUpdates(); len(more) != 0 {
		t.Errorf("unchanged metrics sent again: %v", more)
	}
	r.SetMetric("players", 3)
	r.SetMetric("players", 3)
	if upd := r.metricUpdates(); len(upd) != 1 || upd[0].GetIndex() != 1 || upd[0].GetValue() != 3 {
		t.Errorf("changed metric: %v", upd)
	}
	if _, err := newRuntime(dupMetrics{}, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a metric declared twice was accepted")
	}
}

type dupMetrics struct{ Base }

func (dupMetrics) Manifest() module.Manifest {
	return module.Manifest{Name: "d", Metrics: []module.MetricSpec{{Name: "x", Kind: module.MetricGauge}, {Name: "x", Kind: module.MetricGauge}}}
}

// metricsRoom is a ServeRooms room that sets the players gauge to its
// room's id and counts one kill.
type metricsRoom struct {
	metricsModule
	h module.Host
}

func (m *metricsRoom) Load(h module.Host) error {
	m.h = h
	if err := h.SetMetric("players", float64(h.Server().Room.ID)); err != nil {
		return err
	}
	return h.AddMetric("kills_total", 1)
}

// TestServeRoomsMetricsAreSummed: the gauge of a plugin serving many
// rooms is the sum of what its rooms set (a multi-room deathmatch's
// players were the last room's count), a closed room's share goes, and a
// counter adds up and keeps what closed rooms counted.
func TestServeRoomsMetricsAreSummed(t *testing.T) {
	sh, err := newRoomsServer(func() Module { return &metricsRoom{} }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := sh.Init(context.Background(), &pluginv1.InitRequest{Server: roomTick(2).GetServer()}); err != nil || resp.GetError() != "" {
		t.Fatalf("init: %v %q", err, resp.GetError())
	}
	values := map[uint32]float64{}
	step := func(n uint64, evs ...*pluginv1.Event) {
		t.Helper()
		resp, err := sh.Step(context.Background(), &pluginv1.StepRequest{Tick: n, Rooms: []*pluginv1.RoomTick{roomTick(2), roomTick(3), roomTick(4)}, Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range resp.GetMetrics() {
			values[v.GetIndex()] = v.GetValue()
		}
	}
	open := func(id uint32) *pluginv1.Event {
		return &pluginv1.Event{Kind: pluginv1.EventKind_EVENT_ROOM_OPEN, Room: id}
	}
	step(1, open(2), open(3), open(4))
	if values[0] != 3 || values[1] != 2+3+4 {
		t.Fatalf("three rooms: kills %v players %v; want 3 and 9", values[0], values[1])
	}
	step(2, &pluginv1.Event{Kind: pluginv1.EventKind_EVENT_ROOM_CLOSE, Room: 4})
	if values[0] != 3 || values[1] != 2+3 {
		t.Fatalf("room 4 closed: kills %v players %v; want 3 and 5", values[0], values[1])
	}
}
