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
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/bans"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/discovery"
	"github.com/sparkhost/sparkhost/host/match"
	"github.com/sparkhost/sparkhost/host/modules"
	"github.com/sparkhost/sparkhost/host/replicate"
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
	Modules []modules.Spec
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
	cfg   config.Config
	log   *slog.Logger
	net   *netstack.Server
	loop  *tick.Loop
	match *match.Match
	cmds  *admin.Registry
	mods  *modules.Manager
	world *replicate.Replicator
	// scores is the scoreboard waiting for the end of the tick (game thread).
	scores      []byte
	scoresDirty bool
	bans        *bans.Store
	sock        *admin.SocketServer
	disc        *discovery.Responder
	start       time.Time

	events   lifecycleQueue // admissions and departures, never dropped
	requests chan adminRequest
	chat     *chatGate
	chatBuf  []byte      // game thread: the relayed ChatMessage being built
	schemas  schemaTable // game thread: the module schemas announced (schemas.go)

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

	ops  opsState // metrics, probes, status page, Agones (snapshot.go)
	opts Options
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
	s.match, err = match.New(match.Config{
		Mode: cfg.GameMode(), ScoreLimit: int32(cfg.Match.ScoreLimit), TimeLimit: cfg.TimeLimit(),
		RoundCount: cfg.Match.RoundCount, Maps: cfg.Match.MapRotation, Shuffle: cfg.Match.RandomizeMapOrder,
		Seed: uint64(time.Now().UnixNano()), Warmup: cfg.WarmupDuration(), Intermission: cfg.IntermissionDuration(),
	}, announcer{s}, s.start)
	if err != nil {
		return nil, fmt.Errorf("match: %w", err)
	}
	s.publishView(s.start)
	s.net, err = netstack.NewServer(withHandshakeRules(&cfg, netstack.ServerConfig{
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
	}))
	if err != nil {
		return nil, err
	}
	s.chat = newChatGate(cfg.Limits.ChatPerSecond, cfg.Limits.ChatBurst, cfg.Limits.ChatKickAfter, func(client uint32) {
		_ = s.net.Kick(client, wire.DisconnectRateLimited, "too many chat messages; slow down")
	})
	s.net.Handle(gamemsg.TypeChatMessage, s.chat.receive)
	s.loop = tick.New(tick.Config{Rate: cfg.Server.TickRate, Clock: opts.Clock})
	s.registerBuiltins()
	refresh := cfg.EntityRefresh()
	if refresh == 0 {
		refresh = -1 // the config's 0 is "never"
	}
	s.world, err = replicate.New(replicate.Config{
		TickRate: cfg.Server.TickRate, Rate: cfg.Match.ReplicationRate,
		InterestRadius: float32(cfg.Match.InterestRadius), Repeats: cfg.Match.UpdateRepeats, Refresh: refresh,
		LagWindow: cfg.LagWindow(), Send: s.net.Send, GameStateSync: s.appendGameStateSync,
		RTT: func(c uint32) (time.Duration, bool) {
			st, ok := s.net.ClientStats(c)
			return st.Ping, ok
		},
		Log: log,
	})
	if err != nil {
		s.net.Close()
		return nil, fmt.Errorf("replication: %w", err)
	}
	s.mods = modules.NewManager(modules.Config{
		World:     s.world,
		Transport: s.net, Commands: s.cmds, Log: log, DataDir: cfg.Server.DataDir,
		InboxCapacity: cfg.Modules.InboxCapacity, ClientMessagesPerTick: cfg.Limits.ModuleMessagesPerTick,
		Server:         s.moduleServerInfo,
		AddScore:       func(c uint32, score, kills, deaths int32) { s.match.AddScore(c, score, kills, deaths, s.now) },
		Resolve:        s.resolveModule,
		RestartBackoff: cfg.RestartBackoff(), RestartBackoffMax: cfg.RestartBackoffMax(),
		MaxRestarts: cfg.Modules.MaxRestarts, RestartWindow: cfg.RestartWindow(),
		// Crashes and restarts are logged by the manager; an operator at the
		// interactive console also sees them there, as it sees answers.
		Notify: func(line string) {
			if s.opts.Console != nil && s.opts.ConsoleOut != nil {
				fmt.Fprintln(s.opts.ConsoleOut, line)
			}
		},
	})
	specs := slices.Clone(opts.Modules)
	for _, name := range cfg.Modules.Load {
		spec, err := s.resolveModule(name)
		if err != nil {
			s.net.Close()
			return nil, err
		}
		specs = append(specs, spec)
	}
	for _, spec := range specs {
		if _, err := s.mods.Load(spec); err != nil {
			s.mods.UnloadAll()
			s.net.Close()
			return nil, err
		}
	}
	if err := s.startOps(); err != nil {
		s.mods.UnloadAll()
		s.net.Close()
		return nil, err
	}
	return s, nil
}

// Modules is the module manager (game thread).
func (s *Server) Modules() *modules.Manager { return s.mods }

// World is the entity replication (game thread).
func (s *Server) World() *replicate.Replicator { return s.world }

// moduleBudget is how long the modules' work may take per tick.
func (s *Server) moduleBudget() time.Duration {
	return time.Duration(float64(s.cfg.TickPeriod()) * s.cfg.Modules.TickBudgetFraction)
}

func (s *Server) moduleServerInfo() module.ServerInfo {
	v := s.view.Load()
	return module.ServerInfo{
		Name: s.cfg.Server.Name, Map: v.status.Map, Mode: s.cfg.GameMode(), MatchState: v.status.State,
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
	return "exposed to " + s.net.Policy().Exposure() + "; " + s.net.Protocols()
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
func (s *Server) Run(ctx context.Context) error {
	s.net.Start()
	var err error
	sockPath := filepath.Join(s.cfg.Server.DataDir, admin.SocketName)
	if s.sock, err = admin.ListenSocket(sockPath, s.Exec, s.log); err != nil {
		s.net.Close()
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
		"map", s.match.Phase(time.Now()).Map, "admin_socket", sockPath)

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

// shutdown stops serving in an order that loses nothing: clients are told
// first, then the admin front ends close; bans are persisted on every change.
func (s *Server) shutdown() {
	s.ops.serving.Store(false)
	s.log.Info("shutting down", "players", len(s.players))
	s.net.Close()
	s.drainEvents(time.Now())
	s.mods.UnloadAll()
	if s.disc != nil {
		s.disc.Close()
	}
	if s.sock != nil {
		s.sock.Close()
	}
	// Departures posted by the transport while closing.
	s.drainEvents(time.Now())
}

// step is one tick on the game thread.
func (s *Server) step(t tick.Tick) {
	began := time.Now()
	s.now = t.Now
	s.drainEvents(t.Now)
	s.relayChat()
	s.runAdminRequests()
	s.match.Tick(t.Now)
	if s.origin.IsZero() {
		s.origin = t.Now
	}
	at := t.Now.Sub(s.origin)
	s.world.BeginTick(at)
	s.mods.Step(module.Tick{Number: t.Number, DT: t.DT, Now: t.Now}, s.moduleBudget())
	s.world.Tick(at)
	s.flushScores()
	s.announceSchemas()
	// Everything this tick sent to each client leaves now, packed into as
	// few datagrams as the datagram size allows (docs/protocol.md §5.5).
	s.net.Flush()
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

func (s *Server) drainEvents(now time.Time) {
	for _, e := range s.events.take() {
		s.apply(e, now)
	}
}

func (s *Server) apply(e event, now time.Time) {
	switch e.kind {
	case evAdmitted:
		if s.bans.IsNameBanned(e.client.Name, time.Now()) {
			// Refused before the game sees it: no module, match or world
			// ever learns of the client, nor of its departure.
			s.refused[e.client.ID] = struct{}{}
			_ = s.net.Kick(e.client.ID, wire.DisconnectBanned, "this player name is banned from the server")
			return
		}
		player := e.client
		player.Ticket = nil // for the modules only
		s.players[e.client.ID] = player
		s.served.Add(1)
		s.peakPlayers = max(s.peakPlayers, len(s.players))
		s.match.PlayerJoined(e.client.ID, now)
		version, _ := s.gssVersions.LoadAndDelete(e.client.ID)
		v, _ := version.(uint64) // 0 if unknown: the client gets a fresh GameStateSync
		s.world.AddClient(e.client.ID, v)
		s.sendSchemas(e.client)
		s.mods.ClientAdmitted(module.ClientInfo{ID: e.client.ID, Name: e.client.Name, Addr: e.client.Addr, Ticket: e.client.Ticket})
	case evLeft:
		if _, ok := s.refused[e.client.ID]; ok {
			delete(s.refused, e.client.ID)
			s.gssVersions.Delete(e.client.ID)
			return
		}
		delete(s.players, e.client.ID)
		s.match.PlayerLeft(e.client.ID, now)
		s.world.RemoveClient(e.client.ID)
		s.gssVersions.Delete(e.client.ID)
		s.chat.forget(e.client.ID)
		s.mods.ClientLeft(e.client.ID, e.reason)
	}
}

func (s *Server) publishView(now time.Time) {
	s.view.Store(&serverView{status: s.match.Phase(now), players: len(s.players),
		peakPlayers: s.peakPlayers, maxPlayers: s.cfg.Server.MaxClients})
}

// admissionGameStateSync builds a newly admitted client's GameStateSync
// (called on a network goroutine) and notes which entity schemas it
// carried, so that the game thread resends it if they changed meanwhile.
func (s *Server) admissionGameStateSync(client uint32, dst []byte) []byte {
	version, types := s.world.Schemas()
	s.gssVersions.Store(client, version)
	return s.gameStateSync(client, dst, types)
}

// appendGameStateSync builds a GameStateSync with the current entity
// schemas: replication resends it when modules change their types.
func (s *Server) appendGameStateSync(client uint32, dst []byte) []byte {
	_, types := s.world.Schemas()
	return s.gameStateSync(client, dst, types)
}

// gameStateSync builds a GameStateSync from the latest published view.
func (s *Server) gameStateSync(client uint32, dst []byte, types []gamemsg.EntityTypeSchema) []byte {
	v := s.view.Load()
	return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{
		ClientID: client, ServerTime: s.net.Time(),
		TickRate: uint16(s.cfg.Server.TickRate), ReplicationRate: uint16(s.cfg.Match.ReplicationRate),
		ServerName: s.cfg.Server.Name, MOTD: s.cfg.Server.MOTD, Map: v.status.Map,
		Mode: s.cfg.GameMode(), MatchState: v.status.State, TimeRemaining: float32(v.status.TimeRemaining.Seconds()),
		Types: types,
	})
}

func (s *Server) discoveryInfo() discovery.Info {
	v := s.view.Load()
	return discovery.Info{
		Name: s.cfg.Server.Name, Map: v.status.Map, Mode: uint8(s.cfg.GameMode()),
		Players: uint16(v.players), MaxPlayers: uint16(v.maxPlayers), GamePort: s.Addr().Port(),
		ProtocolVersion: s.net.Protocol(),
	}
}

// announcer broadcasts match events to every admitted client.
type announcer struct{ s *Server }

func (a announcer) MatchStart(m gamemsg.MatchStart) {
	a.s.flushScores()
	a.s.log.Info("match start", "map", m.Map, "round", m.Round)
	a.s.broadcast(gamemsg.TypeMatchStart, gamemsg.AppendMatchStart(nil, &m))
	if a.s.mods != nil {
		a.s.mods.MatchStart(m)
	}
}

func (a announcer) MatchEnd(m gamemsg.MatchEnd) {
	a.s.flushScores()
	a.s.log.Info("match end", "reason", m.Reason.String(), "winner", m.Winner, "score", m.WinnerScore)
	a.s.broadcast(gamemsg.TypeMatchEnd, gamemsg.AppendMatchEnd(nil, &m))
	a.s.opsMatchEnded()
	if a.s.mods != nil {
		a.s.mods.MatchEnd(m)
	}
}

// ScoreUpdate keeps the newest scoreboard; flushScores sends it once at the
// end of the tick (or before a MatchStart or MatchEnd, which must follow the
// scores they close): a tick with several score changes (a kill is two: the
// victim's death and the killer's point) costs one broadcast, not one each.
func (a announcer) ScoreUpdate(m gamemsg.ScoreUpdate) {
	a.s.scores = gamemsg.AppendScoreUpdate(a.s.scores[:0], &m)
	a.s.scoresDirty = true
}

// flushScores broadcasts the pending scoreboard, if any.
func (s *Server) flushScores() {
	if s.scoresDirty {
		s.scoresDirty = false
		s.broadcast(gamemsg.TypeScoreUpdate, s.scores)
	}
}

func (a announcer) MapChanged(name string, index int) {
	a.s.log.Info("map changed", "map", name, "index", index)
	if a.s.mods != nil {
		a.s.mods.MapChange(name, index)
	}
}

func (s *Server) broadcast(t wire.MessageType, payload []byte) {
	if s.net == nil {
		return // announcements made while New builds the match
	}
	if err := s.net.Broadcast(t, wire.ReliableOrdered, payload); err != nil {
		s.log.Warn("broadcast failed", "type", t.String(), "err", err)
	}
}
