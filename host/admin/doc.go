// Package admin is the local administration of a sparkhost server: the
// command Registry, the line syntax operators type (SplitLine), and the two
// front ends that feed it — the server's stdin (ServeConsole) and a Unix
// socket in the data directory (ListenSocket, with Call as its client, used by
// `sparkhost admin`).
//
// Administration is trusted and local only. This package never listens on a
// network address: the socket file is created with mode 0600, so only the
// server's user (and root) can connect. The front ends never run a command
// themselves; they hand each line to an Executor supplied by the server,
// which runs it on the game thread and waits for the answer.
//
// # Socket wire format
//
// One command per connection:
//
//	request  = line "\n"
//	response = status " " length "\n" body
//	status   = "OK" | "ERR"
//	length   = decimal byte count of body (at most MaxResponse)
//	body     = the command's output (OK) or the error message (ERR)
//
// The request line is the command line as typed (see SplitLine), at most
// MaxRequest bytes, without NUL bytes; it must end with "\n" — a line cut
// short by a client that died is never run. The server answers with one
// length-prefixed frame and closes the connection. Because the body's length
// is given before it, no output text can be mistaken for a status, whatever
// bytes it holds. The server gives a client 10 s to send its line and 10 s to
// take the answer, and serves at most 16 connections at once; a connection
// beyond that is answered "ERR" (server busy) at once, so a stuck client
// delays nobody. How long the command itself may run is the Executor's
// business.
//
// For debugging, the protocol can be spoken by hand:
//
//	printf 'help\n' | socat - UNIX-CONNECT:data/admin.sock
package admin
