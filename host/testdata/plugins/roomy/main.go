// Command roomy is the test plugin of rooms served from one process
// (plugin.ServeRooms; host rooms_test.go): in every room it serves, each
// player gets a "marker" entity it owns whose "room" field is the room's
// id, a "hello" (1400) is answered to the room with "room N: NAME: TEXT"
// (1401), and roomy_rooms lists the rooms of this process with their
// players.
package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

const (
	markerType = 70
	helloMsg   = 1400
	echoMsg    = 1401
)

// process is what the rooms of this process know of each other: the test
// asks one room's module for them all.
var process struct {
	sync.Mutex
	rooms map[module.RoomID]*room
}

type room struct {
	plugin.Base
	h       module.Host
	id      module.RoomID
	markers map[uint32]uint32
	paused  bool
}

func (r *room) Manifest() module.Manifest {
	return module.Manifest{
		Name: "roomy", Version: "1",
		Messages: []wire.Schema{
			{ID: helloMsg, Name: "hello", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 3, MaxLen: 66, StringFieldOffset: 0, RequiresAdmitted: true},
			{ID: echoMsg, Name: "echo", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 3, MaxLen: 200, StringFieldOffset: 0, RequiresAdmitted: true},
		},
		EntityTypes: []module.EntityType{{ID: markerType, Name: "marker", Fields: []gamemsg.FieldSchema{{Name: "room", Kind: gamemsg.KindUint32}}}},
		Commands:    []module.CommandSpec{{Name: "roomy_rooms", Help: "the rooms of this process"}, {Name: "roomy_exit", Help: "exits the process"}},
	}
}

func (r *room) Load(h module.Host) error {
	r.h, r.id, r.markers = h, h.Server().Room.ID, make(map[uint32]uint32)
	process.Lock()
	if process.rooms == nil {
		process.rooms = make(map[module.RoomID]*room)
	}
	process.rooms[r.id] = r
	process.Unlock()
	return nil
}

func (r *room) Unload() {
	process.Lock()
	delete(process.rooms, r.id)
	process.Unlock()
}

func (r *room) OnTick(module.Tick) {
	for _, c := range r.h.Clients() {
		if _, ok := r.markers[c.ID]; ok {
			continue
		}
		id, err := r.h.SpawnEntity(module.Spawn{Type: markerType, Owner: c.ID, Fields: []gamemsg.FieldValue{{Index: 0, Kind: gamemsg.KindUint32, Uint: uint32(r.id)}}})
		if err != nil {
			r.h.Fault(err)
			continue
		}
		r.markers[c.ID] = id
	}
}

func (r *room) OnLeft(c module.ClientInfo, _ wire.DisconnectReason) {
	if id, ok := r.markers[c.ID]; ok {
		r.h.DestroyEntity(id)
		delete(r.markers, c.ID)
	}
}

func (r *room) OnMessage(c module.ClientInfo, _ wire.MessageType, payload []byte) {
	rd := wire.NewReader(payload)
	text := rd.Str()
	w := wire.AppendWriter(nil)
	w.Str(fmt.Sprintf("room %d: %s: %s", r.id, c.Name, text))
	if err := r.h.Broadcast(echoMsg, w.Bytes()); err != nil {
		r.h.Fault(err)
	}
}

func (r *room) OnPause(paused bool) { r.paused = paused }

func (r *room) Command(name string, _ []string) (string, error) {
	switch name {
	case "roomy_exit":
		os.Exit(3)
	case "roomy_rooms":
		process.Lock()
		defer process.Unlock()
		var lines []string
		for id, rm := range process.rooms {
			var names []string
			for _, c := range rm.h.Clients() {
				names = append(names, c.Name)
			}
			slices.Sort(names)
			lines = append(lines, fmt.Sprintf("room %d pid %d paused %v: %s", id, os.Getpid(), rm.paused, strings.Join(names, ",")))
		}
		slices.Sort(lines)
		return strings.Join(lines, "\n"), nil
	}
	return "", fmt.Errorf("no command %s", name)
}

func main() { plugin.ServeRooms(func() plugin.Module { return &room{} }) }
