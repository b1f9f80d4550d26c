package host

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// ModuleCheck is what CheckModules learned of one module.
type ModuleCheck struct {
	Source  string // as the config or the flag names it
	Kind    string // "lua", "plugin", "go"; "" when it could not be resolved
	Name    string // from its manifest
	Version string
	// Messages and Metrics count what the manifest declares.
	Messages, Metrics int
	Err               error // nil: it loaded
}

// errNotServing refuses what a checked module tries to do on the network.
var errNotServing = errors.New("sparkhost check: not serving")

// CheckModules loads every module the server would load at start (the
// config's modules.load, then extra, then with [rooms] enabled each of
// rooms.modes in a room of its own) exactly as Run would — Lua compiled
// and run to its manifest, plugins started and their manifests read — and
// unloads them again, without opening any socket. Modules see the
// configured data directory, so their own config files are checked too.
// opts supplies Builtin and ScriptsDir.
func CheckModules(cfg config.Config, opts Options, extra []string) []ModuleCheck {
	out, _ := CheckModuleSchemas(cfg, opts, extra)
	return out
}

// CheckModuleSchemas is CheckModules that also returns the module message
// types the loaded modules registered, with their owners, in ascending id
// order (what a server with these modules announces; `sparkhost schema
// export --module`).
func CheckModuleSchemas(cfg config.Config, opts Options, extra []string) (out []ModuleCheck, schemas []wire.ModuleSchema) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, opts: opts}
	newWorld := func() (*replicate.Replicator, error) {
		return replicate.New(replicate.Config{
			TickRate: cfg.Server.TickRate, Rate: cfg.Match.ReplicationRate, LagWindow: cfg.LagWindow(),
			Send: func(uint32, wire.MessageType, wire.Channel, []byte) error { return errNotServing },
			RTT:  func(uint32) (time.Duration, bool) { return 0, false },
		})
	}
	world, err := newWorld()
	if err != nil {
		return []ModuleCheck{{Source: "replication", Err: err}}, nil
	}
	if cfg.Rooms.Enabled {
		world = nil // modules.load runs for the whole server, which has no world
	}
	reg := wire.NewRegistry()
	mods := supervisor.NewManager(supervisor.Config{
		World: world, Transport: checkTransport{reg: reg}, Commands: admin.NewRegistry(), Log: log,
		DataDir: cfg.Server.DataDir, InboxCapacity: cfg.Modules.InboxCapacity,
		Server: func() module.ServerInfo {
			return module.ServerInfo{Name: cfg.Server.Name, Map: cfg.Match.MapRotation[0], Mode: cfg.GameMode(),
				TickRate: cfg.Server.TickRate, MaxPlayers: cfg.Server.MaxClients, ReplicationRate: cfg.Match.ReplicationRate,
				LagWindow: cfg.LagWindow()}
		},
		AddScore:    func(uint32, int32, int32, int32) {},
		Resolve:     s.resolveModule,
		MaxRestarts: cfg.Modules.MaxRestarts, RestartWindow: cfg.RestartWindow(),
		RestartBackoff: cfg.RestartBackoff(), RestartBackoffMax: cfg.RestartBackoffMax(),
	})
	defer mods.UnloadAll()
	defer func() { schemas = reg.ModuleSchemas() }() // before the modules unload
	for _, src := range append(slices.Clone(cfg.Modules.Load), extra...) {
		c := ModuleCheck{Source: src}
		spec, err := s.resolveModule(src)
		if err != nil {
			c.Err = err
			out = append(out, c)
			continue
		}
		c.Kind = spec.Kind
		name, err := mods.Load(spec)
		if err != nil {
			c.Err = err
			out = append(out, c)
			continue
		}
		c.describe(mods, name)
		out = append(out, c)
	}
	if !cfg.Rooms.Enabled {
		return out, nil
	}
	for i, mode := range cfg.Rooms.Modes {
		c := ModuleCheck{Source: mode}
		spec, err := s.resolveModule(mode)
		if err == nil {
			c.Kind = spec.Kind
			var w *replicate.Replicator
			if w, err = newWorld(); err == nil {
				id := module.RoomID(i + 1)
				if err = mods.OpenRoom(supervisor.RoomSpec{ID: id, World: w}); err == nil {
					var name string
					if name, err = mods.StartInRoom(id, spec); err == nil {
						c.describe(mods, name)
					}
				}
			}
		}
		c.Err = err
		out = append(out, c)
	}
	return out, nil
}

// describe fills in what the loaded module named name declares.
func (c *ModuleCheck) describe(mods *supervisor.Manager, name string) {
	for _, st := range mods.Modules() {
		if st.Name == name {
			c.Name, c.Version, c.Messages, c.Metrics = st.Name, st.Version, len(st.Types), len(st.Metrics)
		}
	}
}

// checkTransport is the network as CheckModules gives it to modules: it
// registers their schemas and refuses to send anything.
type checkTransport struct{ reg *wire.Registry }

func (checkTransport) Handle(wire.MessageType, netstack.Handler) {}
func (checkTransport) Send(uint32, wire.MessageType, wire.Channel, []byte) error {
	return errNotServing
}
func (checkTransport) BroadcastExcept(uint32, wire.MessageType, wire.Channel, []byte) error {
	return errNotServing
}
func (checkTransport) Kick(uint32, wire.DisconnectReason, string) error { return errNotServing }
func (checkTransport) ClientStats(uint32) (netstack.Stats, bool)        { return netstack.Stats{}, false }
func (checkTransport) ChannelBinding(uint32) ([32]byte, bool)           { return [32]byte{}, false }
func (t checkTransport) Registry() *wire.Registry                       { return t.reg }
func (checkTransport) Counters() *netstack.Counters                     { return &netstack.Counters{} }

// String is the check's one line.
func (c ModuleCheck) String() string {
	if c.Err != nil {
		// One line: go-plugin's handshake errors run over several.
		msg, _, _ := strings.Cut(c.Err.Error(), "\n")
		msg = strings.TrimRight(msg, ": ")
		if strings.HasPrefix(msg, "module "+c.Source+" ") || strings.HasPrefix(msg, "module "+c.Source+":") {
			return msg
		}
		return fmt.Sprintf("module %s: %s", c.Source, msg)
	}
	return fmt.Sprintf("module %s: ok: %s %s (%s), %d message types, %d metrics", c.Source, c.Name, c.Version, c.Kind, c.Messages, c.Metrics)
}
