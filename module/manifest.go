package module

import "github.com/sparkhost/sparkhost/netstack/wire"

// Manifest is what a module declares when it loads.
type Manifest struct {
	Name    string // the owner of its message types, entity types and commands
	Version string
	// Messages are the UserDefined types (id ≥ 1000) the module owns;
	// payloads of these types are checked against the schema before the
	// module sees them.
	Messages []wire.Schema
	Commands []CommandSpec // admin console commands the module adds
	// EntityTypes are the replicated entity types the module owns (§9.2):
	// registered with its message types, all or none; an id another module
	// owns is refused. They go, and every entity of the module is destroyed
	// for clients, when the module unloads, crashes or reloads.
	EntityTypes []EntityType
	// Inputs subscribes the module to ClientInput: each valid input of an
	// admitted client reaches it as an EventInput.
	Inputs bool
	// Metrics are the module's own numbers (logins, kills, players in a
	// mode), exported as sparkhost_<module>_<name>: at most MaxMetrics,
	// each one number without labels; set them with Host.SetMetric and
	// Host.AddMetric.
	Metrics []MetricSpec
	// Rooms: one instance of the module serves every room of its mode
	// (EventRoomOpen, Event.Room, RoomHost); without it each room gets an
	// instance of its own (see room.go).
	Rooms bool
	// NoMatch: the module is not a match but a world of its own (an MMO
	// gate, a hub). A server whose one room runs such a module keeps no
	// match state: no phase timer, no scoreboard, no map rotation, no
	// MatchStart, MatchEnd or ScoreUpdate (AddScore does nothing), and
	// LAN discovery and GameStateSync announce mode Custom with the
	// module's name and area (Host.SetArea) where a match announces its
	// map. Match-based modes leave it false and keep the match.
	NoMatch bool
	// AnswersNextTick: the module's answer to a tick may apply at the
	// start of the next one, so the server never waits for it within the
	// tick (a module in its own process: a Go plugin; the same as
	// [modules] plugin_answers = "next_tick" for this module alone). For a
	// world that replicates at a fraction of the tick rate (the MMO) one
	// tick of latency goes unnoticed, and the server's tick no longer
	// contains the plugin's round trip. In-process runtimes ignore it.
	AnswersNextTick bool
	// Protocol is the version of the module's own message protocol, and
	// OldestProtocol the oldest version it still serves (docs/protocol.md
	// §10.4): a client states the version it speaks in the module's own
	// messages, and the module serves every version in OldestProtocol..
	// Protocol or refuses with a clear code. Both are announced to clients
	// (ModuleProtocols). 0 means 1 (and OldestProtocol 0 means Protocol:
	// only the newest is served). Raise Protocol whenever a message's
	// layout or meaning changes; raise OldestProtocol when the module stops
	// serving a version.
	Protocol, OldestProtocol uint16
}

// Protocols returns the declared protocol with the zero values filled in:
// newest and oldest served.
func (m *Manifest) Protocols() (newest, oldest uint16) {
	newest = max(m.Protocol, 1)
	oldest = m.OldestProtocol
	if oldest == 0 {
		oldest = newest
	}
	return newest, oldest
}

// CommandSpec declares one admin console command of a module.
type CommandSpec struct {
	Name, Usage, Help string
}

// MaxCommandNameLen bounds a console command's name.
const MaxCommandNameLen = 32

// ValidCommandName reports whether name may name a console command: 1..32
// bytes, a lowercase ASCII letter first, then lowercase letters, digits,
// '-', '_' or '.'.
func ValidCommandName(name string) bool {
	if name == "" || len(name) > MaxCommandNameLen || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}
