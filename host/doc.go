// Package host is the DedicatedServer: it owns the game thread and everything
// on it — the tick loop, the match state machine and map rotation, the admin
// console and its commands, bans, LAN discovery, server statistics — and
// wires them to the protocol v3 transport (netstack).
//
// Threads: network goroutines (netstack) never touch game state; they post
// events into a bounded queue that the game thread drains every tick. Admin
// commands from stdin or the admin socket are executed on the game thread
// too. Only the game thread calls into the match and (later) the modules.
package host
