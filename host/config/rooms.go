package config

import (
	"fmt"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// RoomsSection is [rooms]: many matches in one server, with a lobby
// (docs/protocol.md §13).
type RoomsSection struct {
	// Enabled gives the server a lobby: admitted clients start outside any
	// room and list, create and join rooms, each running one of Modes.
	// False (the default) is the server's single match: one room every
	// admitted client joins, running modules.load. --rooms sets it.
	Enabled bool `toml:"enabled"`
	// Modes are the modules rooms may run, by name or path as for
	// modules.load (a client names them in RoomCreate); needed with
	// Enabled, 1..64 bytes each, no repeats, at most 32. --mode (repeatable)
	// replaces the list. With Enabled, modules.load runs for the whole
	// server beside the rooms.
	Modes []string `toml:"modes"`
	// Max is how many rooms may exist at once; 1..4096.
	Max int `toml:"max"`
	// DefaultCapacity is the players of a room created with capacity 0;
	// 1..MaxCapacity.
	DefaultCapacity int `toml:"default_capacity"`
	// MaxCapacity is the most players a room may hold; 1..1024.
	MaxCapacity int `toml:"max_capacity"`
	// EmptyGraceSeconds is how long an empty room stays open after its
	// last player left, in seconds; 0..86400.
	EmptyGraceSeconds float64 `toml:"empty_grace_seconds"`
	// Pause says who may toggle a room's pause: "members" or "owner" (an
	// admin always may; the server's single match only its admin).
	Pause string `toml:"pause"`
	// GlobalChat lets clients chat to every admitted client (RoomChat with
	// the global scope); false refuses it with ChatDisabled.
	GlobalChat bool `toml:"global_chat"`
	// RequestsPerSecond is the rate, in requests per second, at which a
	// client's budget of room requests refills; 0.01..1000. RequestBurst
	// is how many it may send at once; 1..1000. Requests over budget are
	// dropped and counted; chat_kick_after of them within a minute
	// disconnect the client (RateLimited).
	RequestsPerSecond float64 `toml:"requests_per_second"`
	RequestBurst      int     `toml:"request_burst"`
	// CreatedPerClient is how many rooms one client may have created that
	// are still open (empty ones included, while they wait out their grace
	// time); 1..4096.
	CreatedPerClient int `toml:"created_per_client"`
	// InboxCapacity is the inbox size, in events, of a module instance
	// that serves one room (a module that serves many has
	// modules.inbox_capacity); 16..1000000.
	InboxCapacity int `toml:"inbox_capacity"`
	// PasswordFreeFailures is how many wrong passwords a room, and a
	// source address (an IPv6 /64), may have before its back-off: each
	// further one makes it refuse passwords, unchecked (RateLimited), for
	// PasswordBackoffSeconds, doubling up to PasswordBackoffMaxSeconds;
	// 1..1000. A room checks at most PasswordFreeFailures+2 passwords in
	// any second when the first back-off is 1 s or more (docs/protocol.md
	// §13.7).
	PasswordFreeFailures      int     `toml:"password_free_failures"`
	PasswordBackoffSeconds    float64 `toml:"password_backoff_seconds"`
	PasswordBackoffMaxSeconds float64 `toml:"password_backoff_max_seconds"`
	// PasswordKickAfter is how many wrong or refused passwords of one
	// client within a minute disconnect it (RateLimited); 1..1000.
	PasswordKickAfter int `toml:"password_kick_after"`
}

// PasswordBackoff is password_backoff_seconds as a time.Duration.
func (r *RoomsSection) PasswordBackoff() time.Duration { return seconds(r.PasswordBackoffSeconds) }

// PasswordBackoffMax is password_backoff_max_seconds as a time.Duration.
func (r *RoomsSection) PasswordBackoffMax() time.Duration {
	return seconds(r.PasswordBackoffMaxSeconds)
}

func defaultRooms() RoomsSection {
	return RoomsSection{Enabled: false, Modes: []string{}, Max: 64, DefaultCapacity: 8, MaxCapacity: 64,
		EmptyGraceSeconds: 30, Pause: "members", GlobalChat: true, RequestsPerSecond: 5, RequestBurst: 10, CreatedPerClient: 2, InboxCapacity: 512,
		PasswordFreeFailures: 5, PasswordBackoffSeconds: 1, PasswordBackoffMaxSeconds: 30, PasswordKickAfter: 10}
}

// EmptyGrace is rooms.empty_grace_seconds as a time.Duration.
func (c *Config) EmptyGrace() time.Duration { return seconds(c.Rooms.EmptyGraceSeconds) }

func (c *Config) checkRooms() *Error {
	r := &c.Rooms
	if e := c.checkList("rooms.modes", r.Modes, gamemsg.MaxRoomModeLen); e != nil {
		return e
	}
	for i, m := range r.Modes {
		if !wire.ValidName([]byte(m), gamemsg.MaxRoomModeLen) {
			return c.refuseAt("rooms.modes", fmt.Sprintf("rooms.modes[%d]", i), m, "", "must be a name: UTF-8 without control characters, not all white space")
		}
	}
	switch {
	case len(r.Modes) > gamemsg.MaxRoomModes:
		return c.refuse("rooms.modes", nil, fmt.Sprintf("must list at most %d modes, not %d", gamemsg.MaxRoomModes, len(r.Modes)))
	case r.Enabled && len(r.Modes) == 0:
		return c.refuseVs("rooms.modes", r.Modes, "rooms.enabled", "must name at least one module when rooms.enabled is true (e.g. --mode deathmatch)")
	}
	if e := c.intIn("rooms.max", r.Max, 1, 4096, " rooms"); e != nil {
		return e
	}
	if e := c.intIn("rooms.max_capacity", r.MaxCapacity, 1, gamemsg.MaxRoomMembers, " players"); e != nil {
		return e
	}
	if !(r.DefaultCapacity >= 1 && r.DefaultCapacity <= r.MaxCapacity) {
		return c.refuseVs("rooms.default_capacity", r.DefaultCapacity, "rooms.max_capacity",
			fmt.Sprintf("must be 1..rooms.max_capacity (%d)", r.MaxCapacity))
	}
	if e := c.floatIn("rooms.empty_grace_seconds", r.EmptyGraceSeconds, 0, 86400, " seconds"); e != nil {
		return e
	}
	if r.Pause != "members" && r.Pause != "owner" {
		return c.refuse("rooms.pause", r.Pause, `must be "members" or "owner"`)
	}
	if e := c.floatIn("rooms.requests_per_second", r.RequestsPerSecond, 0.01, 1000, " requests per second"); e != nil {
		return e
	}
	if e := c.intIn("rooms.request_burst", r.RequestBurst, 1, 1000, " requests"); e != nil {
		return e
	}
	if e := c.intIn("rooms.created_per_client", r.CreatedPerClient, 1, 4096, " rooms"); e != nil {
		return e
	}
	if e := c.intIn("rooms.inbox_capacity", r.InboxCapacity, 16, 1_000_000, " events"); e != nil {
		return e
	}
	return c.checkRoomPasswords()
}

func (c *Config) checkRoomPasswords() *Error {
	r := &c.Rooms
	if e := c.intIn("rooms.password_free_failures", r.PasswordFreeFailures, 1, 1000, " passwords"); e != nil {
		return e
	}
	if e := c.floatIn("rooms.password_backoff_seconds", r.PasswordBackoffSeconds, 0.01, 3600, " seconds"); e != nil {
		return e
	}
	if e := c.floatIn("rooms.password_backoff_max_seconds", r.PasswordBackoffMaxSeconds, 0.01, 86400, " seconds"); e != nil {
		return e
	}
	if r.PasswordBackoffMaxSeconds < r.PasswordBackoffSeconds {
		return c.refuseVs("rooms.password_backoff_max_seconds", r.PasswordBackoffMaxSeconds, "rooms.password_backoff_seconds",
			fmt.Sprintf("must be at least rooms.password_backoff_seconds (%v)", r.PasswordBackoffSeconds))
	}
	return c.intIn("rooms.password_kick_after", r.PasswordKickAfter, 1, 1000, " passwords")
}
