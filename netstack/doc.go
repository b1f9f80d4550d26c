// Package netstack speaks protocol v4, and v3 for compatibility where allowed
// (see docs/protocol.md): the secure UDP transport between sparkhost and its
// game clients.
//
// It owns the endpoint policy, the handshake budgets (per address,
// per prefix, global signatures and replies to unvalidated sources), the
// stateless address validation, the bounded table of half-open handshakes, the
// handshake, the sealed channel of every peer, reliability, liveness and the
// per-peer statistics. It knows nothing of games, modules or Lua: the host
// registers handlers for message types and receives admitted/disconnected
// events; a handler is called on a network goroutine with a payload that has
// already passed its schema, and must copy what it keeps and never block.
//
// Until a v4 source has echoed a cookie the server keeps no state for it,
// computes no key agreement or signature and never sends it more bytes than it
// received; no lock that the game thread's sends or the service loop wait for
// is ever held across a signature or a system call.
//
// The v4 data plane packs (docs/protocol.md §5): Send only queues; a flush —
// Server.QueueFlush (or Flush) once per tick, the end of a receive pass,
// the service loop, or Client.Flush — packs what each peer has due into as few sealed
// datagrams as the datagram size allows (fragmenting reliable messages that
// do not fit one), and the datagrams are written in batches through the
// transport (sendmmsg, recvmmsg on Linux). Every authenticated reliable
// message is acknowledged; one that fails its schema is refused — counted,
// told to the sender — and never stalls a channel or ends a session.
//
// Everything above the transport (netstack/transport) is the same whatever
// carries the datagrams: the server and the client hold a
// transport.Transport, and a transport that proved a peer's address by its
// own handshake says so per datagram, which spares that peer the cookie
// round trip.
//
// Sub-packages hold the pure pieces: wire (codec, NetBuffer, schemas, packed
// datagrams), handshake, cookie (address validation), seal, replay, reliable
// (with fragmentation), policy, ratelimit, trust, transport (the one seam to
// the network: UDP with batched system calls, any net.PacketConn adapted,
// and next WebTransport and WebSocket), and memlink (a seeded lossy
// in-memory link for tests).
package netstack
