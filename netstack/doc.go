// Package netstack speaks protocol v3 (see docs/protocol.md): the secure UDP
// transport between sparkhost and its game clients.
//
// It owns the socket, the endpoint policy, the per-source Connect budget, the
// handshake, the sealed channel of every peer, reliability, liveness and the
// per-peer statistics. It knows nothing of games, modules or Lua: the host
// registers handlers for message types and receives admitted/disconnected
// events; a handler is called on a network goroutine with a payload that has
// already passed its schema, and must copy what it keeps and never block.
//
// Sub-packages hold the pure pieces: wire (codec, NetBuffer, schemas),
// handshake, seal, replay, reliable, policy, ratelimit, trust, and memlink (a
// seeded lossy in-memory link for tests).
package netstack
