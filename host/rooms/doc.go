// Package rooms runs a DedicatedServer's rooms on the game thread
// (docs/protocol.md §13). A room is the unit a module runs in: its own
// players, match (phase, timer, scores, map), entity world (a Replicator of
// its own: entities and their relevance never cross rooms) and module
// instances. A server that runs one match has one fixed room that every
// admitted client joins on admission; a server with a lobby ([rooms]
// enabled) starts clients outside any room.
//
// One room, one name: Room is the room as it runs, and this package is
// where its behaviour lives: its match and world, its clock and
// scoreboard, the room requests (create, join, leave, rename, start,
// pause, kick, passwords), the `rooms` and `room` console commands and the
// match commands of a room, and what a room tells its members. The other
// types that describe a room are views of it, each for one reader:
//
//   - lobby.Entry (host/rooms/lobby): the room as the lobby's rules see it
//     (name, mode, capacity, owner, members, password, status). A Room
//     holds its Entry; the lobby changes it.
//   - supervisor.RoomSpec (host/supervisor): what the module supervisor is
//     given of a room to run modules in (id, world, hooks into the Room).
//   - module.RoomID, module.RoomInfo: the room as a module sees it (the
//     contract); RoomID is the id of a room everywhere in the host.
//   - gamemsg.RoomInfo: the room as the room messages carry it on the wire
//     (Room.Info builds it).
//
// Set is a server's rooms. The host root package keeps the glue: it owns
// the game thread, the players and the transport, takes room requests off
// the network (the sender's budget, a bounded queue) and hands them to Set
// on the game thread. Nothing here is safe for concurrent use but what
// says so (Stats, Max).
//
// A room's match runs on the room's clock, which stands still while the
// room waits for its owner's start and while it is paused; otherwise it is
// the tick's clock (the fixed room's is exactly the tick's).
package rooms
