package rooms

import (
	"log/slog"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/rooms/lobby"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Config is what a server gives its rooms: its settings, the transport,
// the module supervisor and the console, and the glue to what the server
// owns (its players, its tick, its operator). Every field is required but
// MatchEnded.
type Config struct {
	Settings config.Config
	Log      *slog.Logger
	Net      *netstack.Server
	Modules  *supervisor.Manager
	Commands *admin.Registry
	// Player returns an admitted client (the zero ClientInfo for one that
	// is not).
	Player func(client uint32) netstack.ClientInfo
	// FindPlayer resolves a console argument, an id or a name, to an
	// admitted client.
	FindPlayer func(arg string) (netstack.ClientInfo, error)
	// Send sends one message to one client if its protocol defines the
	// type; a departed client is no error.
	Send func(client uint32, t wire.MessageType, ch wire.Channel, payload []byte)
	// Now is the current tick's time; Ticks how many ticks ran.
	Now   func() time.Time
	Ticks func() uint64
	// Notice shows an operator at the interactive console a line (the log
	// has it too).
	Notice func(line string)
	// MatchEnded runs when the match of the server's one room ends.
	MatchEnded func()
}

// Set is a server's rooms (game thread): the lobby and its rules, the
// running rooms, the clients in no room, and the modes rooms may run.
type Set struct {
	cfg   Config
	lobby *lobby.Lobby
	byID  map[module.RoomID]*Room
	order []*Room // by id
	// fixed is the server's one room when it has no lobby; modes are the
	// specs rooms may run ([rooms] modes).
	fixed    *Room
	modes    map[string]supervisor.Spec
	inLobby  map[uint32]struct{} // admitted clients in no room
	browsing map[uint32]struct{} // ... who asked for the room list
	buf      []byte
	failed   []module.RoomID // rooms whose module failed, closed at the end of the tick
	counts   counters
	guesses  passwordStats
}

// New returns a server's rooms, none open yet, and adds the rooms' console
// commands to cfg.Commands.
func New(cfg Config) *Set {
	r := &cfg.Settings.Rooms
	rs := &Set{
		cfg:      cfg,
		byID:     make(map[module.RoomID]*Room),
		modes:    make(map[string]supervisor.Spec),
		inLobby:  make(map[uint32]struct{}),
		browsing: make(map[uint32]struct{}),
		lobby: lobby.New(lobby.Config{Max: r.Max, MaxCapacity: r.MaxCapacity,
			DefaultCapacity: r.DefaultCapacity, Modes: r.Modes, Pause: r.Pause,
			CreatedPerClient: r.CreatedPerClient, Passwords: passwordLimits(r)}),
	}
	rs.registerCommands()
	return rs
}

// SetModes offers the modes rooms may be created with: names in order,
// each run by its spec (a server with a lobby).
func (rs *Set) SetModes(names []string, specs map[string]supervisor.Spec) {
	for _, name := range names {
		rs.modes[name] = specs[name]
	}
	rs.lobby.SetModes(names)
}

// Fixed is the server's one room (nil: a server with a lobby). It is set
// before the server serves and never changes: any goroutine may read it.
func (rs *Set) Fixed() *Room { return rs.fixed }

// Of returns the client's room (nil: the lobby).
func (rs *Set) Of(client uint32) *Room {
	if e := rs.lobby.Of(client); e != nil {
		return rs.byID[e.ID]
	}
	return nil
}

// Get returns an open room (nil: none of that id).
func (rs *Set) Get(id module.RoomID) *Room { return rs.byID[id] }

// All lists the open rooms in id order; the slice is the Set's, to read.
func (rs *Set) All() []*Room { return rs.order }

// Len is the number of rooms the lobby holds.
func (rs *Set) Len() int { return rs.lobby.Len() }

// Max is how many rooms may be open at once (1 on a server that runs one
// match); safe from any goroutine once the server serves.
func (rs *Set) Max() int {
	if rs.fixed != nil {
		return 1
	}
	return rs.lobby.Max()
}

// Modes lists the modes rooms may be created with.
func (rs *Set) Modes() []string { return rs.lobby.Modes() }

// InLobby is how many admitted clients are in no room.
func (rs *Set) InLobby() int { return len(rs.inLobby) }
