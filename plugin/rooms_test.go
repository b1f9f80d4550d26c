package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

// roomModule is one room's module of a ServeRooms plugin.
type roomModule struct {
	Base
	h        module.Host
	room     module.RoomID
	admitted []uint32
	paused   bool
	drainBy  time.Time // OnDrain's deadline while draining
	unloaded *[]module.RoomID
}

func (m *roomModule) Manifest() module.Manifest {
	return module.Manifest{Name: "rooms", Messages: []wire.Schema{
		{ID: 1000, Name: "ping", Direction: wire.BothDirections, Channel: wire.Reliable, MinLen: 0, MaxLen: 8, StringFieldOffset: wire.NoStringFields},
	}}
}
func (m *roomModule) Load(h module.Host) error { m.h, m.room = h, h.Server().Room.ID; return nil }
func (m *roomModule) OnAdmitted(c module.ClientInfo) {
	m.admitted = append(m.admitted, c.ID)
}
func (m *roomModule) OnMessage(c module.ClientInfo, t wire.MessageType, _ []byte) {
	m.h.Broadcast(t, []byte{byte(m.room)})
}
func (m *roomModule) OnPause(paused bool) { m.paused = paused }
func (m *roomModule) OnDrain(draining bool, deadline time.Time) {
	if draining {
		m.drainBy = deadline
	}
}
func (m *roomModule) Unload() { *m.unloaded = append(*m.unloaded, m.room) }
func (m *roomModule) Command(string, []string) (string, error) {
	return fmt.Sprintf("room %d players %d", m.room, len(m.h.Clients())), nil
}

func roomTick(id uint32) *pluginv1.RoomTick {
	return &pluginv1.RoomTick{Room: id, Server: &pluginv1.ServerInfo{TickRate: 60, Room: &pluginv1.RoomInfo{Id: id, Name: fmt.Sprint("r", id)}}}
}

// TestServeRoomsDispatchesByRoom: one process, one Step for two rooms: each
// room's module is made on EVENT_ROOM_OPEN (the first room's during Init)
// with the room's facts, gets its
// own events, acts in its own room; commands take @ROOM; EVENT_ROOM_CLOSE
// unloads it.
func TestServeRoomsDispatchesByRoom(t *testing.T) {
	var unloaded []module.RoomID
	mods := map[module.RoomID]*roomModule{}
	sh, err := newRoomsServer(func() Module {
		m := &roomModule{unloaded: &unloaded}
		return m
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// Started for room 5 (the first room the server runs it in), which its
	// Init loads; the EVENT_ROOM_OPEN of room 5 that follows finds it open.
	resp, err := sh.Init(context.Background(), &pluginv1.InitRequest{Server: roomTick(5).GetServer(), EntityIdFirst: 1 << 24, EntityIdLast: 2<<24 - 1})
	if err != nil || resp.GetError() != "" || !resp.GetManifest().GetRooms() {
		t.Fatalf("init: %v %q rooms=%v", err, resp.GetError(), resp.GetManifest().GetRooms())
	}
	step := func(n uint64, rooms []*pluginv1.RoomTick, evs ...*pluginv1.Event) []*pluginv1.Action {
		t.Helper()
		r, err := sh.Step(context.Background(), &pluginv1.StepRequest{Tick: n, Rooms: rooms, Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetActions()
	}
	both := []*pluginv1.RoomTick{roomTick(5), roomTick(6)}
	acts := step(1, both,
		&pluginv1.Event{Kind: pluginv1.EventKind_EVENT_ROOM_OPEN, Room: 5, EntityIdFirst: 1 << 24, EntityIdLast: 2<<24 - 1},
		&pluginv1.Event{Kind: pluginv1.EventKind_EVENT_ROOM_OPEN, Room: 6, EntityIdFirst: 1 << 24, EntityIdLast: 2<<24 - 1},
		&pluginv1.Event{Kind: pluginv1.EventKind_EVENT_ADMITTED, Room: 5, Client: 1, Info: &pluginv1.ClientInfo{Name: "a"}},
		&pluginv1.Event{Kind: pluginv1.EventKind_EVENT_ADMITTED, Room: 6, Client: 2, Info: &pluginv1.ClientInfo{Name: "b"}},
		&pluginv1.Event{Kind: pluginv1.EventKind_EVENT_MESSAGE, Room: 6, Client: 2, Type: 1000},
		&pluginv1.Event{Kind: pluginv1.EventKind_EVENT_PAUSE, Room: 5, Paused: true},
		&pluginv1.Event{Kind: pluginv1.EventKind_EVENT_DRAIN, Room: 6, Draining: true, DrainDeadlineUnixNs: 1_700_000_000e9},
	)
	for id, r := range sh.rooms {
		mods[module.RoomID(id)] = r.mod.(*roomModule)
	}
	if len(mods) != 2 || mods[5].room != 5 || mods[6].room != 6 {
		t.Fatalf("rooms %v", mods)
	}
	if fmt.Sprint(mods[5].admitted) != "[1]" || fmt.Sprint(mods[6].admitted) != "[2]" || !mods[5].paused || mods[6].paused {
		t.Fatalf("room 5 %+v, room 6 %+v", mods[5], mods[6])
	}
	if !mods[6].drainBy.Equal(time.Unix(1_700_000_000, 0)) || !mods[5].drainBy.IsZero() {
		t.Fatalf("OnDrain: room 5 %v, room 6 %v", mods[5].drainBy, mods[6].drainBy)
	}
	if len(acts) != 1 || acts[0].GetRoom() != 6 || acts[0].GetKind() != pluginv1.ActionKind_ACTION_BROADCAST || acts[0].GetPayload()[0] != 6 {
		t.Fatalf("actions %v", acts)
	}
	for _, args := range [][]string{nil, {"@7"}} {
		if cr, _ := sh.Command(context.Background(), &pluginv1.CommandRequest{Name: "x", Args: args}); cr.GetError() == "" {
			t.Errorf("command %v answered %q", args, cr.GetOutput())
		}
	}
	if cr, _ := sh.Command(context.Background(), &pluginv1.CommandRequest{Name: "x", Args: []string{"@6"}}); cr.GetOutput() != "room 6 players 1" {
		t.Errorf("command @6: %q %q", cr.GetOutput(), cr.GetError())
	}
	step(2, []*pluginv1.RoomTick{roomTick(6)}, &pluginv1.Event{Kind: pluginv1.EventKind_EVENT_ROOM_CLOSE, Room: 5})
	if fmt.Sprint(unloaded) != "[5]" || len(sh.rooms) != 1 {
		t.Fatalf("unloaded %v, rooms %d", unloaded, len(sh.rooms))
	}
	if cr, _ := sh.Command(context.Background(), &pluginv1.CommandRequest{Name: "x"}); cr.GetOutput() != "room 6 players 1" {
		t.Errorf("command with one room left: %q %q", cr.GetOutput(), cr.GetError())
	}
}

// failingRoom is a room module whose Load refuses to start.
type failingRoom struct{ roomModule }

func (*failingRoom) Load(module.Host) error { return fmt.Errorf("config.toml:3: unknown key speeed") }

// TestServeRoomsInitLoadsItsRoom: a ServeRooms plugin loads the room it is
// started for within Init, so a Load that fails fails the start (the
// server lists the module failed) instead of leaving a room without its
// module while the server believes it runs.
func TestServeRoomsInitLoadsItsRoom(t *testing.T) {
	var unloaded []module.RoomID
	sh, err := newRoomsServer(func() Module { return &failingRoom{roomModule{unloaded: &unloaded}} }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := sh.Init(context.Background(), &pluginv1.InitRequest{Server: &pluginv1.ServerInfo{TickRate: 60}})
	if err != nil || resp.GetError() != "config.toml:3: unknown key speeed" {
		t.Fatalf("init: %v, error %q", err, resp.GetError())
	}
	if len(sh.rooms) != 0 {
		t.Errorf("a room whose Load failed is open: %v", sh.rooms)
	}
	if _, err := sh.Step(context.Background(), &pluginv1.StepRequest{Tick: 1}); err == nil {
		t.Error("a plugin whose start failed took a Step")
	}

	ok, err := newRoomsServer(func() Module { return &roomModule{unloaded: &unloaded} }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := ok.Init(context.Background(), &pluginv1.InitRequest{Server: &pluginv1.ServerInfo{TickRate: 60}}); err != nil || resp.GetError() != "" {
		t.Fatalf("init: %v %q", err, resp.GetError())
	}
	if r := ok.rooms[0]; r == nil || !r.loaded {
		t.Fatalf("the whole server's room (0) was not loaded by Init: %v", ok.rooms)
	}
}
