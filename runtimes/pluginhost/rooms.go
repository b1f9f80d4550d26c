package pluginhost

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

// Rooms. A plugin whose manifest sets rooms serves every room of its mode
// from this one process (module/room.go): the manager gives the adapter
// EventRoomOpen and EventRoomClose, every event carries its room, and the
// adapter sends them all in the tick's one Step, with each open room's
// facts (StepRequest.rooms). An action names the room it acts in and is
// carried out through that room's Host (module.RoomHost); room 0 is the
// adapter's own Host (the module's one room, for a plugin without rooms).

// openRoom notes a room the plugin serves from this tick on.
func (m *Module) openRoom(id module.RoomID) {
	rh, ok := m.host.(module.RoomHost)
	if !ok {
		return
	}
	h, err := rh.Room(id)
	if err != nil {
		return
	}
	if m.rooms == nil {
		m.rooms = make(map[module.RoomID]module.Host)
	}
	m.rooms[id] = h
}

// closeRoom forgets a room.
func (m *Module) closeRoom(id module.RoomID) { delete(m.rooms, id) }

// hostFor is the Host an action of room id goes through.
func (m *Module) hostFor(id uint32) (module.Host, error) {
	if h, ok := m.rooms[module.RoomID(id)]; ok {
		return h, nil // room 0 here is the whole server's scope
	}
	if id == 0 {
		return m.host, nil
	}
	return nil, fmt.Errorf("room %d: %w", id, module.ErrNoRoom)
}

// roomTicks lists the facts of every open room for the Step request, in
// room order, reusing dst's storage.
func (m *Module) roomTicks(dst []*pluginv1.RoomTick) []*pluginv1.RoomTick {
	if len(m.rooms) == 0 {
		return dst
	}
	ids := make([]module.RoomID, 0, len(m.rooms))
	for id := range m.rooms {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, cmp.Compare)
	for i, id := range ids {
		if i >= len(m.ticks) {
			m.ticks = append(m.ticks, &pluginv1.RoomTick{Server: &pluginv1.ServerInfo{}})
		}
		rt := m.ticks[i]
		rt.Room = uint32(id)
		fillServer(rt.Server, m.rooms[id].Server())
		dst = append(dst, rt)
	}
	return dst
}

// goneRoom reports whether err is an action's for a room that closed (or
// a client that left): the plugin had not been told yet; no fault.
func goneRoom(err error) bool {
	return errors.Is(err, module.ErrNoRoom) || errors.Is(err, module.ErrNoClient)
}
