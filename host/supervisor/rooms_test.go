package supervisor_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// roomEcho is a module that answers a client's 1000 with 1001 carrying its
// room id, to the whole room, and records what it saw.
type roomEcho struct {
	multi  bool
	seen   []module.Event
	host   module.Host
	closed []module.RoomID
}

var (
	echoReq = schema(1000, wire.ClientToServer, wire.Reliable, 4, 4)
	echoRep = schema(1001, wire.ServerToClient, wire.Reliable, 4, 4)
)

func (e *roomEcho) funcs() *supervisor.Funcs {
	return &supervisor.Funcs{
		Manifest: module.Manifest{Name: "echo", Version: "1", Messages: []wire.Schema{echoReq, echoRep},
			Rooms: e.multi, Commands: []module.CommandSpec{{Name: "echo_room"}}},
		OnLoad: func(h module.Host) error { e.host = h; return nil },
		OnEvent: func(h module.Host, ev *module.Event) {
			e.seen = append(e.seen, *ev)
			switch ev.Kind {
			case module.EventRoomClose:
				e.closed = append(e.closed, ev.Room)
			case module.EventMessage:
				rh := h
				if e.multi {
					var err error
					if rh, err = h.(module.RoomHost).Room(ev.Room); err != nil {
						panic(err)
					}
				}
				if err := rh.Broadcast(1001, binary.LittleEndian.AppendUint32(nil, uint32(ev.Room))); err != nil {
					panic(err)
				}
			}
		},
		OnCommand: func(h module.Host, _ string, args []string) (string, error) {
			return fmt.Sprintf("room %d args %v", h.Server().Room.ID, args), nil
		},
	}
}

// roomRig opens rooms 1 and 2 in a rig.
func roomRig(t *testing.T) *rig {
	r := newRig(t, 0)
	for _, id := range []module.RoomID{1, 2} {
		if err := r.mgr.OpenRoom(supervisor.RoomSpec{ID: id, Info: func() module.ServerInfo {
			return module.ServerInfo{Room: module.RoomInfo{ID: id, Name: fmt.Sprint("room ", id)}}
		}}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// replyRoom waits for a 1001 and returns the room it names.
func replyRoom(t *testing.T, c *netstack.Client) (uint32, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			return 0, false
		}
		if m.Header.Type == 1001 {
			return binary.LittleEndian.Uint32(m.Payload), true
		}
	}
}

func TestRoomsOneInstanceEach(t *testing.T) {
	r := roomRig(t)
	echoes := map[module.RoomID]*roomEcho{}
	for _, id := range []module.RoomID{1, 2} {
		e := &roomEcho{}
		echoes[id] = e
		if _, err := r.mgr.StartInRoom(id, supervisor.Spec{Source: "echo", Kind: "go", New: func() (module.Module, error) { return e.funcs(), nil }}); err != nil {
			t.Fatal(err)
		}
	}
	reg := clientRegistry(t, echoReq, echoRep)
	a, b, lobby := r.dial("a", reg), r.dial("b", reg), r.dial("lobby", reg)
	if err := r.mgr.JoinRoom(a.ID(), 1); err != nil {
		t.Fatal(err)
	}
	if err := r.mgr.JoinRoom(b.ID(), 2); err != nil {
		t.Fatal(err)
	}
	r.step()
	for _, c := range []*netstack.Client{a, b, lobby} {
		if err := c.Send(1000, wire.Reliable, []byte{1, 2, 3, 4}); err != nil {
			t.Fatal(err)
		}
	}
	r.stepUntil("both rooms' messages", func() bool {
		return slices.ContainsFunc(echoes[1].seen, isMsg) && slices.ContainsFunc(echoes[2].seen, isMsg)
	})
	for id, e := range echoes {
		for _, ev := range e.seen {
			if ev.Room != id {
				t.Errorf("room %d's instance saw an event of room %d: %+v", id, ev.Room, ev)
			}
			if ev.Kind == module.EventRoomOpen {
				t.Errorf("an instance of one room was told EventRoomOpen")
			}
		}
		if n := count(e.seen, isMsg); n != 1 {
			t.Errorf("room %d's instance saw %d messages, want 1", id, n)
		}
	}
	if got, ok := replyRoom(t, a); !ok || got != 1 {
		t.Errorf("a's reply names room %d (%v)", got, ok)
	}
	if got, ok := replyRoom(t, b); !ok || got != 2 {
		t.Errorf("b's reply names room %d (%v)", got, ok)
	}
	if got, ok := replyRoom(t, lobby); ok {
		t.Errorf("the lobby was sent room %d's reply", got)
	}
	r.stepUntil("the lobby's message counted as unrouted", func() bool { return r.mgr.Unrouted() == 1 })

	// Commands take @ROOM when the module runs in several.
	if _, err := r.cmds.Execute("echo_room"); err == nil || !strings.Contains(err.Error(), "runs in rooms 1, 2") {
		t.Errorf("echo_room without a room: %v", err)
	}
	if out, err := r.cmds.Execute("echo_room @2 x"); err != nil || out != "room 2 args [x]" {
		t.Errorf("echo_room @2 x: %q %v", out, err)
	}

	// Closing room 1 unloads its instance; the types stay for room 2.
	r.mgr.LeaveRoom(a.ID(), 1, gamemsg.LeaveClosed, wire.DisconnectUnknown)
	if err := r.mgr.CloseRoom(1); err != nil {
		t.Fatal(err)
	}
	if n := len(r.mgr.Modules()); n != 1 {
		t.Fatalf("%d instances after closing room 1", n)
	}
	if _, _, ok := r.srv.Registry().Lookup(1000); !ok {
		t.Fatal("room 2's module lost its types with room 1")
	}
	if err := r.mgr.CloseRoom(2); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := r.srv.Registry().Lookup(1000); ok {
		t.Fatal("the types outlived the last instance")
	}
}

func TestRoomsOneInstanceForMany(t *testing.T) {
	r := roomRig(t)
	e := &roomEcho{multi: true}
	starts := 0
	spec := supervisor.Spec{Source: "echo", Kind: "go", New: func() (module.Module, error) { starts++; return e.funcs(), nil }}
	for _, id := range []module.RoomID{1, 2} {
		if _, err := r.mgr.StartInRoom(id, spec); err != nil {
			t.Fatal(err)
		}
	}
	if starts != 1 {
		t.Fatalf("%d instances for a module that serves many rooms", starts)
	}
	st := r.mgr.Modules()
	if len(st) != 1 || !st[0].MultiRoom || !slices.Equal(st[0].Rooms, []module.RoomID{1, 2}) {
		t.Fatalf("status %+v", st)
	}
	if err := e.host.Send(1, 1001, []byte{0, 0, 0, 0}); !errors.Is(err, module.ErrManyRooms) {
		t.Errorf("Send on the Host of a module of many rooms: %v", err)
	}
	reg := clientRegistry(t, echoReq, echoRep)
	a, b := r.dial("a", reg), r.dial("b", reg)
	r.mgr.JoinRoom(a.ID(), 1)
	r.mgr.JoinRoom(b.ID(), 2)
	r.step()
	opened := map[module.RoomID]module.IDRange{}
	for _, ev := range e.seen {
		if ev.Kind == module.EventRoomOpen {
			opened[ev.Room] = ev.EntityIDs
		}
	}
	if len(opened) != 2 {
		t.Fatalf("rooms opened: %v", opened)
	}
	a.Send(1000, wire.Reliable, []byte{1, 2, 3, 4})
	b.Send(1000, wire.Reliable, []byte{1, 2, 3, 4})
	r.stepUntil("both messages", func() bool { return count(e.seen, isMsg) == 2 })
	for _, ev := range e.seen {
		if ev.Kind == module.EventMessage && ev.Room != map[uint32]module.RoomID{a.ID(): 1, b.ID(): 2}[ev.Client] {
			t.Errorf("message of client %d tagged room %d", ev.Client, ev.Room)
		}
	}
	if got, ok := replyRoom(t, a); !ok || got != 1 {
		t.Errorf("a's reply names room %d (%v)", got, ok)
	}
	if got, ok := replyRoom(t, b); !ok || got != 2 {
		t.Errorf("b's reply names room %d (%v)", got, ok)
	}
	if out, err := r.cmds.Execute("echo_room @2"); err != nil || out != "room 0 args [@2]" {
		t.Errorf("a module of many rooms gets @ROOM itself: %q %v", out, err)
	}
	r.mgr.LeaveRoom(a.ID(), 1, gamemsg.LeaveClosed, wire.DisconnectUnknown)
	if err := r.mgr.CloseRoom(1); err != nil {
		t.Fatal(err)
	}
	r.step()
	if !slices.Equal(e.closed, []module.RoomID{1}) || len(r.mgr.Modules()) != 1 {
		t.Fatalf("closed %v, %d instances", e.closed, len(r.mgr.Modules()))
	}
	if _, err := e.host.(module.RoomHost).Room(1); !errors.Is(err, module.ErrNoRoom) {
		t.Errorf("the Host of a closed room: %v", err)
	}
}

func isMsg(ev module.Event) bool { return ev.Kind == module.EventMessage }

func count(evs []module.Event, f func(module.Event) bool) int {
	n := 0
	for _, ev := range evs {
		if f(ev) {
			n++
		}
	}
	return n
}
