// Package wire owns the byte-level encoding of protocol v3 packets: the 23/27-byte
// packet header, the NetBuffer reader and writer, the built-in message payloads,
// the message-type table and the schema registry for module (UserDefined) types.
//
// Everything here is pure: no sockets, no clocks, no goroutines. Every parser
// checks lengths before it allocates, never panics on any input, and reports a
// malformed input with an error instead of partial data.
package wire
