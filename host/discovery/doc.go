// Package discovery owns sparkhost's opt-in LAN discovery (docs/protocol.md
// §12): a small plaintext query and answer on the discovery port (27016/udp by
// default) that lets a player list the servers on this machine and the local
// network before connecting.
//
// An answer carries metadata only: server name, map, mode, player count, game
// port and protocol version. It must never carry a secret, the identity key or
// anything else a client could use in place of the identity pin check of §8:
// discovery is unauthenticated, so whatever it says is a hint and connecting
// still verifies the server.
//
// # Wire format (version 1, integers little-endian)
//
// A query is exactly QuerySize (64) bytes:
//
//	offset size  field
//	0      4     magic "SPKQ"
//	4      1     version = 1
//	5      8     nonce, random per Query call
//	13     51    zero padding
//
// An answer is 26..154 bytes (no trailing bytes):
//
//	0      4     magic "SPKA"
//	4      1     version = 1
//	5      8     the query's nonce, echoed
//	13     2     protocol_version (3 for protocol v3)
//	15     2     game_port (never 0)
//	17     2     players (≤ max_players)
//	19     2     max_players
//	21     1     mode (GameMode byte of §9; any value is carried)
//	22     2+n   name: str, n ≤ 64
//	24+n   2+m   map:  str, m ≤ 64
//
// A str is a u16 byte length and that many bytes of UTF-8 with no control
// character (C0, DEL, C1) and no bidirectional embedding, override or isolate
// (U+202A..U+202E, U+2066..U+2069): the text ends up on a terminal, so it must
// not be able to move the cursor or reorder the listing. Both may be empty.
//
// # Anti-amplification
//
// A responder answers only a query of exactly 64 bytes, well formed, from a
// source its endpoint policy admits (loopback, or the concrete hosts of its LAN
// subnet — never the Internet), within that source's answer budget (a token
// bucket per IPv4 address: burst 16, 4/s by default). An answer is at most 154
// bytes, under the rule that it never exceeds 3× the query (192), so a forged
// source gains at most 2.4× in bytes and 616 bytes/s once its burst is spent.
// Answers use a different magic from queries, so a responder never answers an
// answer and two responders cannot be set against each other.
package discovery
