// Package v3strict is a strict protocol v3 client for black-box tests,
// written from the frozen v3 contract (protocol-v3.md) alone: its own
// framing, handshake, sealed channel and reliability, sharing no code with
// the transport it tests.
//
// It speaks exactly v3 and records a violation for anything a v3 server may
// not send it: a type outside the contract's §4 table and the module types
// it was told about, a type in the wrong direction or on the wrong channel,
// a size or payload outside its rule, a plain frame of the wrong type, an
// OrderedSequence used twice or a gap that never fills, an acknowledgement
// of a sequence it never sent or of a malformed packet (v3 drops those
// unacknowledged), a reliable message of its own never acknowledged, or a
// server that falls silent. What it drops, it drops as the contract says:
// a malformed reliable packet is never acknowledged.
//
// It is not a game client: it keeps no world beyond what checking the
// entity messages needs. It imports only the standard library and
// golang.org/x/crypto, and nothing of the project.
package v3strict
