package supervisor

import (
	"log/slog"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The supervisor's configuration: what it needs of the network side, how
// a module is made, and the limits of every instance.

// Defaults of Config.
const (
	DefaultInboxCapacity     = 4096
	DefaultRoomInboxCapacity = 512
	DefaultMaxFaults         = 10
	DefaultFaultWindow       = time.Minute
	DefaultRestartBackoff    = time.Second
	DefaultRestartBackoffMax = 30 * time.Second
	DefaultMaxRestarts       = 5
	DefaultRestartWindow     = 10 * time.Minute
	// DefaultClientMessagesPerTick is [limits] module_messages_per_tick's
	// default.
	DefaultClientMessagesPerTick = 64
)

// Transport is what the manager needs of the network side; *netstack.Server
// implements it.
type Transport interface {
	Handle(t wire.MessageType, h netstack.Handler)
	Send(id uint32, t wire.MessageType, ch wire.Channel, payload []byte) error
	BroadcastExcept(except uint32, t wire.MessageType, ch wire.Channel, payload []byte) error
	Kick(id uint32, reason wire.DisconnectReason, detail string) error
	ClientStats(id uint32) (netstack.Stats, bool)
	ChannelBinding(id uint32) ([32]byte, bool)
	Registry() *wire.Registry
	Counters() *netstack.Counters
}

// Spec says how to create a module: where it comes from and a constructor
// (called again for every reload and restart).
type Spec struct {
	Source string // the path or name it was loaded by
	Kind   string // "lua", "plugin", "go"
	New    func() (module.Module, error)
}

// Config configures a Manager. Zero values mean the documented defaults.
type Config struct {
	Transport Transport
	Commands  *admin.Registry
	Log       *slog.Logger
	DataDir   string // module directories are DataDir/modules/NAME
	// InboxCapacity is each module's inbox size in events (0 = 4096).
	InboxCapacity int
	// RoomInboxCapacity is the inbox size of an instance that serves one
	// room of a server with a lobby (0 = 512): a room's few players need
	// less, and there are many rooms. An instance that serves many rooms
	// has InboxCapacity.
	RoomInboxCapacity int
	// ClientMessagesPerTick is how many messages of module types (and
	// ClientInputs, each counted once) one client may have copied into the
	// module inboxes per tick, all modules together; the rest are dropped
	// and counted (0 = 64; [limits] module_messages_per_tick).
	ClientMessagesPerTick int
	// Budget is how long a module's work may take per tick (Tick.Deadline).
	Budget time.Duration
	// MaxFaults in FaultWindow mark a module failed and unload it (0 = 10 per minute).
	MaxFaults   int
	FaultWindow time.Duration
	// Server and AddScore are the host's facts and scoreboard.
	Server   func() module.ServerInfo
	AddScore func(client uint32, score, kills, deaths int32)
	// Resolve turns a `module load` argument into a Spec.
	Resolve func(nameOrPath string) (Spec, error)
	// RestartBackoff is the wait, in tick time, before a crashed module (see
	// ErrCrashed) is started again (0 = 1s). It doubles after each crash or
	// failed start in a row, up to RestartBackoffMax (0 = 30s; never below
	// RestartBackoff), and resets once the module has run RestartBackoffMax
	// without crashing.
	RestartBackoff    time.Duration
	RestartBackoffMax time.Duration
	// MaxRestarts crashes (failed starts included) within RestartWindow mark
	// a module failed instead of restarting it; it stays failed until an
	// operator runs `module load` (0 = 5 within 10 minutes).
	MaxRestarts   int
	RestartWindow time.Duration
	// Notify, when set, receives one human-readable line for each crash,
	// restart and failure of a module, e.g. "module echo crashed: plugin
	// process exited: exit status 3; restarting in 1s". It is called on the
	// game thread and must not block; the manager logs the same events.
	Notify func(line string)
	// World is the entity world of the whole server's scope (room 0, where
	// Load runs modules unless SetDefaultRoom names a room); nil gives its
	// modules no entities (the entity API returns ErrNoWorld and a manifest
	// declaring entity types is refused). Rooms bring their own (RoomSpec).
	World *replicate.Replicator
	// Failed, when set, is told when a module fails for good (too many
	// faults or crashes) with the rooms it served, so that the host can
	// close them. Game thread; it must not call back into the manager.
	Failed func(name string, rooms []module.RoomID)
}

// populate fills the zero fields with their documented defaults: the one
// place they are decided.
func (cfg *Config) populate() {
	if cfg.InboxCapacity <= 0 {
		cfg.InboxCapacity = DefaultInboxCapacity
	}
	if cfg.RoomInboxCapacity <= 0 {
		cfg.RoomInboxCapacity = DefaultRoomInboxCapacity
	}
	if cfg.MaxFaults <= 0 {
		cfg.MaxFaults = DefaultMaxFaults
	}
	if cfg.FaultWindow <= 0 {
		cfg.FaultWindow = DefaultFaultWindow
	}
	if cfg.RestartBackoff <= 0 {
		cfg.RestartBackoff = DefaultRestartBackoff
	}
	if cfg.RestartBackoffMax <= 0 {
		cfg.RestartBackoffMax = DefaultRestartBackoffMax
	}
	cfg.RestartBackoffMax = max(cfg.RestartBackoffMax, cfg.RestartBackoff)
	if cfg.MaxRestarts <= 0 {
		cfg.MaxRestarts = DefaultMaxRestarts
	}
	if cfg.RestartWindow <= 0 {
		cfg.RestartWindow = DefaultRestartWindow
	}
	if cfg.ClientMessagesPerTick <= 0 {
		cfg.ClientMessagesPerTick = DefaultClientMessagesPerTick
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Server == nil {
		cfg.Server = func() module.ServerInfo { return module.ServerInfo{} }
	}
	if cfg.AddScore == nil {
		cfg.AddScore = func(uint32, int32, int32, int32) {}
	}
}
