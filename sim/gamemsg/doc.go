// Package gamemsg holds the built-in game messages of docs/protocol.md §9
// and §13: their type ids, receive schemas, codecs and allocation-free
// structural checks — input and prediction (ClientInput, InputAck), entity
// replication (GameStateSync, EntitySpawn, EntityStateUpdate,
// EntityDestroy), chat and match (ChatMessage, MatchStart, MatchEnd,
// PlayerRespawn, ScoreUpdate), and the rooms (RoomListRequest … RoomUpdate).
//
// Server, client, bots and modules all encode and parse with it, so the two
// ends agree by construction. It knows the wire's framing types only
// (netstack/wire) and must never know a transport, a session, the host or a
// module: Register defines its types in a wire.Registry, which the
// transport then uses to check what it receives.
package gamemsg
