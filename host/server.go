package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/bans"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/discovery"
	"github.com/sparkhost/sparkhost/host/match"
	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/host/rooms"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/host/tick"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/ops"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Options configure New.
type Options struct {
	Config config.Config
	Logger *slog.Logger // nil = slog.Default()
	// Console, when set, is read for admin commands (the server's stdin);
	// answers go to ConsoleOut.
	Console    io.Reader
	ConsoleOut io.Writer
	// Clock drives the tick loop; nil = real time.
	Clock tick.Clock
	// Modules are loaded at start, in order, besides config modules.load
	// (which Resolve turns into specs); a module that fails to load stops
	// start-up.
	Modules []supervisor.Spec
	// ScriptsDir is where `--module NAME` finds NAME.lua ("" = "scripts").
	ScriptsDir string
	// Builtin names the Go plugin modules built into the running program:
	// for NAME it returns the executable and arguments that serve it (the
	// sparkhost binary and a hidden sub-command). nil = none.
	Builtin func(name string) (path string, args []string, ok bool)
	// Version is the program's version, shown by the ops layer.
	Version string
}

// Server is the DedicatedServer.
type Server struct {
	cfg  config.Config
	log  *slog.Logger
	net  *netstack.Server
	loop *tick.Loop
	cmds *admin.Registry
	mods *supervisor.Manager
	// startProblems: a line for each configured module that did not start.
	startProblems []string
	bans          *bans.Store
	sock          *admin.SocketServer
	disc          *discovery.Responder
	start         time.Time

	events   lifecycleQueue // admissions and departures, never dropped
	leaving  []event        // departures drained, applied after the chat and requests sent before them
	requests chan adminRequest
	chat     *chatGate
	chatBuf  []byte // game thread: the relayed ChatMessage being built

	// The rooms (host/rooms; game thread) and the receive side of their
	// requests (roomglue.go).
	rooms    *rooms.Set
	roomReqs *requestGate

	// Facts the network goroutines read (GameStateSync, discovery), published
	// by the game thread after every tick.
	view atomic.Pointer[serverView]

	// gssVersions maps a client to the entity schema version of the
	// GameStateSync it was sent at admission (written on the network
	// goroutine, taken by the game thread when it learns of the admission).
	gssVersions sync.Map

	// Game-thread state.
	now         time.Time // the current tick's time (commands use it)
	origin      time.Time // the first tick's time: server time 0 for replication
	players     map[uint32]netstack.ClientInfo
	refused     map[uint32]struct{} // admitted clients kicked for a banned name, until they leave
	peakPlayers int
	served      atomic.Uint64

	ops opsState // metrics, probes, status page, Agones (snapshot.go)
	web webState // the web transports when [web] is on (web.go)
	// drain is the drain (drain.go; game thread); drainView what other
	// goroutines read of it (nil: not draining).
	drain     drainState
	drainView atomic.Pointer[drainView]
	opts      Options
}

type adminRequest struct {
	line  string
	reply chan adminReply
}

type adminReply struct {
	out string
	err error
}

// serverView is an immutable snapshot of what other goroutines may read.
type serverView struct {
	status      match.Status
	players     int
	peakPlayers int
	maxPlayers  int
	rooms       int
}

// New loads the identity, opens the ban list and the socket, and builds the
// match; nothing is served until Run.
func New(opts Options) (*Server, error) {
	cfg := opts.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{
		cfg: cfg, log: log, opts: opts, start: time.Now(), now: time.Now(),
		requests: make(chan adminRequest, 64),
		players:  make(map[uint32]netstack.ClientInfo),
		refused:  make(map[uint32]struct{}),
		cmds:     admin.NewRegistry(),
	}
	s.ops.tick = ops.NewTickRecorder(cfg.TickPeriod())
	announceIdentity(log, cfg.Server.DataDir)
	identity, created, err := trust.LoadOrCreateIdentity(cfg.Server.DataDir)
	if err != nil {
		return nil, err
	}
	if created {
		log.Info("created server identity", "dir", cfg.Server.DataDir)
	}
	if s.bans, err = bans.Open(filepath.Join(cfg.Server.DataDir, bans.FileName)); err != nil {
		return nil, err
	}
	s.net, err = netstack.NewServer(withHandshakeRules(&cfg, netstack.ServerConfig{
		Sessions:          s.newWebHub(),
		Registry:          gamemsg.NewRegistry(),
		Bind:              cfg.Network.BindAddress,
		Port:              cfg.Server.Port,
		Identity:          identity,
		MaxClients:        cfg.Server.MaxClients,
		ConnectBudget:     ratelimit.Config{Burst: cfg.Network.ConnectBurst, RefillPerSecond: cfg.Network.ConnectRefillPerSecond},
		Timeout:           cfg.ClientTimeoutDuration(),
		HeartbeatInterval: cfg.HeartbeatDuration(),
		Logger:            log,
		IsBanned:          func(a netip.Addr) bool { return s.bans.IsBanned(a, time.Now()) },
		Welcome: func(client uint32, dst []byte) (wire.MessageType, wire.Channel, []byte) {
			return gamemsg.TypeGameStateSync, wire.ReliableOrdered, s.admissionGameStateSync(client, dst)
		},
		OnAdmitted: func(ci netstack.ClientInfo) { s.events.push(event{kind: evAdmitted, client: ci}) },
		OnDisconnected: func(ci netstack.ClientInfo, r wire.DisconnectReason, d string) {
			s.events.push(event{kind: evLeft, client: ci, reason: r, detail: d})
		},
		OnResumed:  func(ci netstack.ClientInfo) { s.events.push(event{kind: evResumed, client: ci}) },
		ResumeHold: cfg.ResumeHoldDuration(),
	}))
	if err == nil {
		err = s.openWeb()
	}
	if err != nil {
		if s.net != nil {
			s.net.Close()
		}
		s.closeWeb()
		return nil, err
	}
	s.chat = newChatGate(cfg.Limits.ChatPerSecond, cfg.Limits.ChatBurst, cfg.Limits.ChatKickAfter, func(client uint32) {
		_ = s.net.Kick(client, wire.DisconnectRateLimited, "too many chat messages; slow down")
	})
	s.net.Handle(gamemsg.TypeChatMessage, s.chat.receive)
	s.net.Handle(gamemsg.TypeRoomChat, s.chat.receiveRoomChat)
	s.roomReqs = newRequestGate(cfg.Rooms.RequestsPerSecond, cfg.Rooms.RequestBurst, cfg.Limits.ChatKickAfter, func(client uint32) {
		_ = s.net.Kick(client, wire.DisconnectRateLimited, "too many room requests; slow down")
	})
	for _, t := range rooms.RequestTypes {
		s.net.Handle(t, s.roomReqs.receive)
	}
	s.loop = tick.New(tick.Config{Rate: cfg.Server.TickRate, Clock: opts.Clock, Slice: cfg.GameThreadSlice(), Log: log})
	s.registerBuiltins()
	s.registerDrain()
	s.mods = supervisor.NewManager(supervisor.Config{
		Transport: s.net, Commands: s.cmds, Log: log, DataDir: cfg.Server.DataDir,
		InboxCapacity: cfg.Modules.InboxCapacity, RoomInboxCapacity: cfg.Rooms.InboxCapacity,
		ClientMessagesPerTick: cfg.Limits.ModuleMessagesPerTick,
		Server:                s.moduleServerInfo,
		Resolve:               s.resolveModule,
		Failed:                func(name string, ids []module.RoomID) { s.rooms.ModuleFailed(name, ids) },
		RestartBackoff:        cfg.RestartBackoff(), RestartBackoffMax: cfg.RestartBackoffMax(),
		MaxRestarts: cfg.Modules.MaxRestarts, RestartWindow: cfg.RestartWindow(),
		// Crashes and restarts are logged by the manager; an operator at the
		// interactive console also sees them there, as it sees answers.
		Notify: s.consoleNotice,
	})
	s.rooms = s.newRooms()
	specs := slices.Clone(opts.Modules)
	for _, name := range cfg.Modules.Load {
		spec, err := s.resolveModule(name)
		if err != nil {
			s.net.Close()
			s.closeWeb()
			return nil, err
		}
		specs = append(specs, spec)
	}
	if err := s.openRooms(specs); err != nil {
		s.net.Close()
		s.closeWeb()
		return nil, err
	}
	s.publishView(s.start)
	for _, spec := range specs {
		// A module that does not start is listed failed (the manager logs
		// it and tells the console); the server runs without it, not
		// ready (/readyz) until `module load` starts it.
		if _, err := s.mods.Start(spec); err != nil {
			s.startProblems = append(s.startProblems, fmt.Sprintf("%s; the server runs without it, not ready (/readyz): fix it, then module load %s",
				strings.Join(strings.Fields(err.Error()), " "), spec.Source))
		}
	}
	if s.rooms.Fixed() != nil {
		s.rooms.SettleFixed(specs) // before the first admission's GameStateSync
		s.publishView(s.start)
	}
	if err := s.startOps(); err != nil {
		s.mods.UnloadAll()
		s.net.Close()
		s.closeWeb()
		return nil, err
	}
	return s, nil
}

// Modules is the module manager (game thread).
func (s *Server) Modules() *supervisor.Manager { return s.mods }

// StartProblems are one line for each configured module that failed to
// start (it is listed failed; the server runs without it).
func (s *Server) StartProblems() []string { return s.startProblems }

// World is the entity replication of the server's one room (game thread);
// nil on a server with a lobby, whose rooms have their own.
func (s *Server) World() *replicate.Replicator {
	if r := s.rooms.Fixed(); r != nil {
		return r.World()
	}
	return nil
}

// moduleBudget is how long the modules' work may take per tick.
func (s *Server) moduleBudget() time.Duration {
	return time.Duration(float64(s.cfg.TickPeriod()) * s.cfg.Modules.TickBudgetFraction)
}

// moduleServerInfo is the server's facts for a module of the whole server.
func (s *Server) moduleServerInfo() module.ServerInfo {
	v := s.view.Load()
	return module.ServerInfo{
		Draining: s.drain.on, DrainDeadline: s.drain.deadline,
		Name: s.cfg.Server.Name, Map: v.status.Map, Mode: v.status.Mode, MatchState: v.status.State,
		TickRate: s.cfg.Server.TickRate, Tick: s.loop.Stats().Ticks, Players: len(s.players), MaxPlayers: s.cfg.Server.MaxClients,
		ReplicationRate: s.cfg.Match.ReplicationRate, LagWindow: s.cfg.LagWindow(),
	}
}

// Addr is the game port's address; Pin the identity pin.
func (s *Server) Addr() netip.AddrPort { return s.net.Addr() }

// Pin returns the server identity pin.
func (s *Server) Pin() string { return s.net.Pin() }

// Exposure says who can reach the server and which protocols it accepts,
// e.g. "exposed to every IPv4 and IPv6 address, on every interface; protocol
// v4 with address validation, v3 refused".
func (s *Server) Exposure() string {
	out := "exposed to " + s.net.Policy().Exposure() + "; " + s.net.Protocols()
	if s.cfg.Rooms.Enabled && !s.cfg.Internet() {
		out += " (a lobby of rooms needs protocol v4)"
	}
	return out
}

// Net exposes the transport (modules send through it).
func (s *Server) Net() *netstack.Server { return s.net }

// Commands is the admin command registry (modules add their own).
func (s *Server) Commands() *admin.Registry { return s.cmds }

// Exec runs one admin command line on the game thread and returns its
// answer. It is the executor behind stdin and the admin socket.
func (s *Server) Exec(line string) (string, error) {
	req := adminRequest{line: line, reply: make(chan adminReply, 1)}
	select {
	case s.requests <- req:
	case <-time.After(5 * time.Second):
		return "", errors.New("server busy: the game thread did not take the command within 5 s")
	}
	select {
	case r := <-req.reply:
		return r.out, r.err
	case <-time.After(30 * time.Second):
		return "", errors.New("command did not finish within 30 s")
	}
}

// Run serves until ctx is cancelled, then shuts down gracefully: every client
// is told ServerShutdown and the admin socket and discovery are closed.
// While it runs, server.memory_limit_mib (when set) is the process's Go
// memory limit.
func (s *Server) Run(ctx context.Context) error {
	defer applyMemoryLimit(&s.cfg, s.log)()
	s.net.Start()
	s.serveWeb()
	var err error
	sockPath := filepath.Join(s.cfg.Server.DataDir, admin.SocketName)
	if s.sock, err = admin.ListenSocket(sockPath, s.Exec, s.log); err != nil {
		s.net.Close()
		s.closeWeb()
		s.stopOps()
		return err
	}
	if s.cfg.LAN.Enabled {
		s.disc, err = discovery.Listen(discovery.ResponderConfig{
			Bind: s.cfg.Network.BindAddress, Port: s.cfg.LAN.Port, Info: s.discoveryInfo, Logger: s.log,
		})
		if err != nil {
			s.sock.Close()
			s.net.Close()
			s.closeWeb()
			s.stopOps()
			return fmt.Errorf("lan discovery: %w", err)
		}
	}
	var wg sync.WaitGroup
	consoleCtx, stopConsole := context.WithCancel(ctx)
	if s.opts.Console != nil {
		out := s.opts.ConsoleOut
		if out == nil {
			out = io.Discard
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			admin.ServeConsole(consoleCtx, s.opts.Console, out, s.Exec)
		}()
	}
	s.ops.serving.Store(true)
	s.log.Info("server started", "addr", s.Addr().String(), "pin", s.Pin(), "tick_rate", s.cfg.Server.TickRate,
		"map", s.view.Load().status.Map, "rooms", s.cfg.Rooms.Enabled, "admin_socket", sockPath)

	ctx, s.drain.stop = context.WithCancel(ctx) // a finished drain ends the loop
	runErr := s.loop.Run(ctx, s.step)
	stopConsole()
	s.shutdown()
	s.stopOps()
	wg.Wait()
	if errors.Is(runErr, context.Canceled) {
		return nil
	}
	return runErr
}

// shutdown stops serving in an order that loses nothing: the rooms close
// (their players told why), clients are told — the transport delivers what
// they were sent before their Disconnect, within its close linger — then
// the admin front ends close; bans are persisted on every change.
func (s *Server) shutdown() {
	s.ops.serving.Store(false)
	s.log.Info("shutting down", "players", len(s.players))
	s.rooms.CloseAll(gamemsg.CloseShutdown)
	s.net.Flush()
	s.net.Close()
	s.closeWeb() // after the close linger delivered the web sessions' Disconnects
	s.drainEvents(time.Now())
	s.applyDepartures(time.Now())
	s.mods.UnloadAll()
	if s.disc != nil {
		s.disc.Close()
	}
	if s.sock != nil {
		s.sock.Close()
	}
	// Departures posted by the transport while closing.
	s.drainEvents(time.Now())
	s.applyDepartures(time.Now())
}

// step is one tick on the game thread.
func (s *Server) step(t tick.Tick) {
	began := time.Now()
	s.now = t.Now
	s.drainEvents(t.Now)
	s.relayChat()
	s.runRoomRequests()
	s.applyDepartures(t.Now)
	s.runAdminRequests()
	s.rooms.Tick(t.Now)
	if s.origin.IsZero() {
		s.origin = t.Now
	}
	at := t.Now.Sub(s.origin)
	s.rooms.BeginWorlds(at)
	s.mods.Step(module.Tick{Number: t.Number, DT: t.DT, Now: t.Now}, s.moduleBudget())
	s.rooms.TickWorlds(at)
	s.rooms.EndTick(t.Now)
	s.drainStep(t.Now)
	s.net.AnnounceSchemas() // a changed table of module types (netstack sends it first to whoever gets a module message)
	// Everything this tick sent to each client leaves now, packed into as
	// few datagrams as the datagram size allows (docs/protocol.md §5.5),
	// by the transport's tick writer: the packing is not the tick's time.
	s.net.QueueFlush()
	s.publishView(t.Now)
	s.afterStep(t.Now, began)
}

// runAdminRequests executes the admin commands that arrived since the last tick.
func (s *Server) runAdminRequests() {
	for {
		select {
		case req := <-s.requests:
			out, err := s.cmds.Execute(req.line)
			req.reply <- adminReply{out, err}
		default:
			return
		}
	}
}

// drainEvents applies the admissions posted since the last call and holds
// the departures back for applyDepartures: a client's chat and room
// requests travel in queues of their own, and what it sent before it left
// (a line said just before quit) is carried out before its departure,
// which would make it unknown.
func (s *Server) drainEvents(now time.Time) {
	for _, e := range s.events.take() {
		if e.kind == evLeft {
			s.leaving = append(s.leaving, e)
			continue
		}
		s.apply(e, now)
	}
}

// applyDepartures applies the departures drainEvents held back.
func (s *Server) applyDepartures(now time.Time) {
	for i := range s.leaving {
		s.apply(s.leaving[i], now)
		s.leaving[i] = event{}
	}
	s.leaving = s.leaving[:0]
}

func (s *Server) apply(e event, now time.Time) {
	switch e.kind {
	case evAdmitted:
		id := e.client.ID
		if s.bans.IsNameBanned(e.client.Name, time.Now()) {
			// Refused before the game sees it: no module, match or world
			// ever learns of the client, nor of its departure.
			s.refused[id] = struct{}{}
			_ = s.net.Kick(id, wire.DisconnectBanned, "this player name is banned from the server")
			return
		}
		player := e.client
		player.Ticket = nil // for the modules only
		s.players[id] = player
		s.served.Add(1)
		s.peakPlayers = max(s.peakPlayers, len(s.players))
		version, _ := s.gssVersions.LoadAndDelete(id)
		v, _ := version.(uint64) // 0 if unknown: the client gets a fresh GameStateSync
		s.mods.ClientAdmitted(module.ClientInfo{ID: id, Name: e.client.Name, Addr: e.client.Addr, Ticket: e.client.Ticket})
		s.rooms.Admit(id, v)
	case evLeft:
		id := e.client.ID
		if _, ok := s.refused[id]; ok {
			delete(s.refused, id)
			s.gssVersions.Delete(id)
			return
		}
		if _, ok := s.players[id]; !ok {
			return
		}
		s.rooms.Depart(id, e.reason, now) // before the player goes: its room tells its name
		delete(s.players, id)
		s.gssVersions.Delete(id)
		s.chat.forget(id)
		s.roomReqs.forget(id)
		s.mods.ClientLeft(id, e.reason)
	case evResumed:
		s.applyResumed(e.client)
	}
}

// publishView publishes the facts other goroutines read: the match of the
// server's one room (none on a server with a lobby) and the players.
func (s *Server) publishView(time.Time) {
	st := match.Status{Mode: s.cfg.GameMode()}
	if r := s.rooms.Fixed(); r != nil {
		st = r.Phase()
	}
	s.view.Store(&serverView{status: st, players: len(s.players),
		peakPlayers: s.peakPlayers, maxPlayers: s.cfg.Server.MaxClients, rooms: s.rooms.Len()})
}

// admissionGameStateSync builds a newly admitted client's GameStateSync
// (called on a network goroutine) and notes which entity schemas it
// carried, so that the game thread resends it if they changed meanwhile.
// On a server with a lobby the client is in no room yet: no map, no types.
func (s *Server) admissionGameStateSync(client uint32, dst []byte) []byte {
	r := s.rooms.Fixed()
	if r == nil {
		return s.gameStateSync(client, dst, nil)
	}
	version, types := r.World().Schemas()
	s.gssVersions.Store(client, version)
	return s.gameStateSync(client, dst, types)
}

// gameStateSync builds a GameStateSync from the latest published view.
func (s *Server) gameStateSync(client uint32, dst []byte, types []gamemsg.EntityTypeSchema) []byte {
	v := s.view.Load()
	return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{
		ClientID: client, ServerTime: s.net.Time(),
		TickRate: uint16(s.cfg.Server.TickRate), ReplicationRate: uint16(s.cfg.Match.ReplicationRate),
		ServerName: s.cfg.Server.Name, MOTD: s.cfg.Server.MOTD, Map: v.status.Map,
		Mode: v.status.Mode, MatchState: v.status.State, TimeRemaining: float32(v.status.TimeRemaining.Seconds()),
		Types: types,
	})
}

func (s *Server) discoveryInfo() discovery.Info {
	v := s.view.Load()
	if s.drainView.Load() != nil {
		// A draining server wants no players: LAN browsers list it full,
		// under a name that says why (the v4 answer has no draining flag).
		return discovery.Info{
			Name: drainingName(s.cfg.Server.Name), Map: v.status.Map, Mode: uint8(v.status.Mode),
			Players: uint16(v.maxPlayers), MaxPlayers: uint16(v.maxPlayers), GamePort: s.Addr().Port(),
			ProtocolVersion: s.net.Protocol(),
		}
	}
	return discovery.Info{
		Name: s.cfg.Server.Name, Map: v.status.Map, Mode: uint8(v.status.Mode),
		Players: uint16(v.players), MaxPlayers: uint16(v.maxPlayers), GamePort: s.Addr().Port(),
		ProtocolVersion: s.net.Protocol(),
	}
}
