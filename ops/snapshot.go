package ops

import (
	"time"

	"github.com/sparkhost/sparkhost/netstack"
)

// Source is what the ops layer reads. Snapshot must be safe from any
// goroutine and must not wait for the game thread.
type Source interface {
	Snapshot() Snapshot
}

// Snapshot is the server as the operator sees it at one moment.
type Snapshot struct {
	Name, Map, Mode, MatchState string
	Round                       int
	Started                     time.Time // when the server was built
	Version                     string    // the program's version
	// Pin is the server's identity pin ("ed25519:…"), GameAddress the
	// game port's bound address.
	Pin, GameAddress string

	TickRate     int    // configured ticks per second (Hz)
	Ticks        uint64 // ticks run
	LateTicks    uint64 // ticks that started after their slot
	SkippedTicks uint64 // slots dropped because the loop fell too far behind
	// Serving is true while the game port is open and the tick loop runs.
	Serving bool
	// Draining is true while the server drains (it admits nobody and stops
	// by DrainDeadline at the latest): not ready.
	Draining      bool
	DrainDeadline time.Time

	Players, PeakPlayers, MaxPlayers int
	ConnectionsServed                uint64 // clients admitted since start
	ChatRelayed, ChatDropped         uint64 // chat messages relayed; dropped over a client's budget or a full queue
	ChatRateLimited                  uint64 // clients disconnected for flooding chat (RateLimited)

	Net []netstack.CounterSample // the transport's counters
	// NetHistograms are the transport's distributions of its sessions
	// (RTT, its variation, loss, bandwidth, send-queue delay).
	NetHistograms []netstack.HistogramSample
	PlayerList    []Player // admitted clients, by id
	Modules       []Module // loaded modules, in load order (published by the game thread a few times a second)
	// Rooms (published with the modules): the first MaxRooms rooms by id,
	// the counts by mode and state (bounded by the configured modes: the
	// metrics' labels), the clients in no room, and the totals.
	Rooms        []Room
	RoomCounts   []RoomCount
	RoomsMax     int
	LobbyPlayers int
	RoomsOpened  uint64
	RoomsClosed  uint64
	// RoomPasswords counts room passwords: wrong ones checked, ones
	// refused unchecked during a back-off, clients disconnected for
	// guessing (docs/protocol.md §13.7).
	RoomPasswords RoomPasswords
	// Web is the web transports' state; nil when [web] is off.
	Web *Web
}

// Web is the state of the web transports (WebTransport, WebSocket).
type Web struct {
	Port int // the TCP and UDP port number
	// WebTransport and WebSocket say which endpoints are served (the paths
	// are fixed: /wt, /ws; the connect facts at /web.json).
	WebTransport, WebSocket bool
	TLS                     bool // TCP serves HTTPS (an operator's certificate)
	// CertHashes are the SHA-256 of the self-signed WebTransport
	// certificates (served, next; standard base64, as a page's
	// serverCertificateHashes takes them); none with an operator's
	// certificate.
	CertHashes []string
	Sessions   int    // live web sessions
	Opened     uint64 // web sessions opened since start
	// Refused: upgrades refused at web.max_sessions (SessionCap) or for
	// their Origin, and TCP or QUIC connections refused at a connection
	// cap (Connections); IdleClosed: sessions closed for web.idle_timeout.
	RefusedSessionCap, RefusedOrigin, RefusedConnections, IdleClosed uint64
}

// RoomPasswords are the room password counters.
type RoomPasswords struct {
	Wrong, Refused, Kicked uint64
}

// MaxRooms bounds the rooms a Snapshot lists (the page's table).
const MaxRooms = 200

// Room is one room on the status page.
type Room struct {
	ID                uint32
	Name, Mode, Map   string
	State             string // waiting, playing, paused, ended
	Players, Capacity int
	Owner             uint32
	Password          bool
}

// RoomCount is how many rooms of one mode are in one state, and their
// players.
type RoomCount struct {
	Mode, State    string
	Rooms, Players int
}

// Player is one admitted client. The address is left out on purpose: the
// page shows who plays, not where from.
type Player struct {
	ID            uint32
	Name          string
	Ping          time.Duration
	Loss          float64 // inbound packet loss 0..1
	BandwidthUp   float64 // bytes/s the server sends it
	BandwidthDown float64 // bytes/s it sends the server
	// Congestion control: the round trip's variation, the estimated
	// bandwidth toward the player and the pacing rate (bytes/s; 0 when
	// not estimated or not paced), how long the oldest message of the last
	// flush waited, and whether its state waits for the pacer.
	RTTVariance    time.Duration
	Bandwidth      float64
	SendRate       float64
	SendQueueDelay time.Duration
	Backlogged     bool
	// Held: the player's path went dark and its seat is held for a
	// resumption (docs/operations.md, "Resumption"); the figures above are
	// those of before the outage.
	Held bool
}

// Module is one loaded module; the host sums the instances of a module
// that runs one per room into one row.
type Module struct {
	Name, Kind, Version, State, LastError string
	Faults, Restarts, InboxDrops          uint64
	InboxDepth, InboxCapacity             int
	TickTime                              time.Duration // time spent in its Step since it loaded
	Metrics                               []ModuleMetric
}

// ModuleMetric is one metric a module reports (at most 32 per module, no
// labels: the module's manifest fixes them).
type ModuleMetric struct {
	Name, Help string
	Counter    bool // else a gauge
	Value      float64
}

// Module states as the host names them.
const (
	StateRunning    = "running"
	StateRestarting = "restarting"
	StateFailed     = "failed"
)

var moduleStates = [...]string{StateRunning, StateRestarting, StateFailed}
