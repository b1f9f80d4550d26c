package host

import (
	"cmp"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/ops"
	"github.com/sparkhost/sparkhost/ops/agones"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// modulesPublishEvery is how often the game thread publishes the modules'
// status for the ops layer (a few times a second: the page polls once).
const modulesPublishEvery = 250 * time.Millisecond

// opsState is what the game thread publishes for the ops layer and the
// Agones adapter, and the listener itself.
type opsState struct {
	tick    *ops.TickRecorder
	http    *ops.Server
	agones  *agones.Adapter
	serving atomic.Bool

	roster      atomic.Pointer[[]ops.Player] // id and name of the admitted clients
	modules     atomic.Pointer[[]ops.Module]
	rooms       atomic.Pointer[roomsView]
	rosterKey   [2]uint64 // (admissions, players) when the roster was built
	rosterAt    time.Time // tick time of the last roster publication
	modulesAt   time.Time // tick time of the last modules publication
	agonesReady bool
	lastMap     string
	// lastWebHashes is the web-cert-hashes annotation last set.
	lastWebHashes string
}

// startOps opens the ops listener and starts the Agones adapter, as
// configured (both are off by default). New calls it last, so that the
// probes answer (starting, not ready) while Run has not begun; the end of
// Run closes them.
func (s *Server) startOps() error {
	if s.cfg.Ops.Listen != "" {
		srv, err := ops.Listen(ops.Config{
			Listen: s.cfg.Ops.Listen, Source: s, Tick: s.ops.tick, Stall: s.cfg.OpsStall(),
			History: s.cfg.Ops.HistorySeconds, Log: s.log,
		})
		if err != nil {
			return err
		}
		s.ops.http = srv
		s.log.Info("ops listener started: metrics, probes and the status page", "url", "http://"+srv.Addr().String()+"/")
	}
	if s.cfg.Agones.Enabled {
		s.ops.agones = agones.Start(agones.Config{Port: s.cfg.Agones.SDKPort, HealthInterval: s.cfg.AgonesHealthInterval(), Log: s.log})
		s.log.Info("agones adapter started", "sdk_port", s.ops.agones.Port())
	}
	return nil
}

// stopOps closes what startOps opened.
func (s *Server) stopOps() {
	s.ops.serving.Store(false)
	if s.ops.http != nil {
		s.ops.http.Close()
	}
	if s.ops.agones != nil {
		s.ops.agones.Close()
	}
}

// OpsAddr is the ops listener's address (nil when it is off or not started).
func (s *Server) OpsAddr() net.Addr {
	if s.ops.http == nil {
		return nil
	}
	return s.ops.http.Addr()
}

// afterStep is the end of every tick on the game thread: it records the
// tick's duration, publishes what the ops layer reads, and drives the
// Agones adapter (so a stuck tick stops its health pings).
func (s *Server) afterStep(t time.Time, began time.Time) {
	if key := [2]uint64{s.served.Load(), uint64(len(s.players))}; s.rosterDue(key, t) {
		s.ops.rosterKey, s.ops.rosterAt = key, t
		r := make([]ops.Player, 0, len(s.players))
		for _, ci := range s.players {
			r = append(r, ops.Player{ID: ci.ID, Name: ci.Name})
		}
		s.ops.roster.Store(&r)
	}
	if t.Sub(s.ops.modulesAt) >= modulesPublishEvery || s.ops.modules.Load() == nil {
		s.ops.modulesAt = t
		s.publishModules()
		s.publishRooms()
	}
	if a := s.ops.agones; a != nil {
		s.driveAgones(a, t)
	}
	end := time.Now()
	s.ops.tick.Observe(end, end.Sub(began))
}

// rosterSmall is the most players whose roster is rebuilt at every change;
// a larger one at most every modulesPublishEvery.
const rosterSmall = 256

// rosterDue reports whether the roster is to be built again at this tick:
// it changed (key: admissions, players) and, for a large server, the last
// one is modulesPublishEvery old. Building it is a copy of every player,
// so while thousands arrive (a player or more every tick) a rebuild at
// each change would copy the whole table 60 times a second for a page that
// polls once.
func (s *Server) rosterDue(key [2]uint64, t time.Time) bool {
	switch {
	case s.ops.roster.Load() == nil:
		return true
	case key == s.ops.rosterKey:
		return false
	}
	return len(s.players) <= rosterSmall || t.Sub(s.ops.rosterAt) >= modulesPublishEvery
}

// publishModules publishes the modules for the ops layer: one row per
// module name, the instances of a module that runs one per room summed
// (their worst state shown), so that the metrics' labels stay the loaded
// modules, never rooms.
func (s *Server) publishModules() {
	st := s.mods.Modules()
	out := make([]ops.Module, 0, len(st))
	index := make(map[string]int, len(st))
	for _, m := range st {
		i, seen := index[m.Name]
		if !seen {
			i = len(out)
			index[m.Name] = i
			out = append(out, ops.Module{Name: m.Name, Kind: m.Kind, Version: m.Version, State: m.State})
		}
		om := &out[i]
		if stateRank(m.State) > stateRank(om.State) {
			om.State = m.State
		}
		if m.LastError != "" {
			om.LastError = m.LastError
		}
		om.Faults += m.Faults
		om.Restarts += m.Restarts
		om.InboxDrops += m.InboxDrops
		om.InboxDepth += m.InboxDepth
		om.InboxCapacity += m.InboxCapacity
		om.TickTime += m.TickTime
		for _, v := range m.Metrics {
			j := slices.IndexFunc(om.Metrics, func(x ops.ModuleMetric) bool { return x.Name == v.Name })
			if j < 0 {
				om.Metrics = append(om.Metrics, ops.ModuleMetric{Name: v.Name, Help: v.Help, Counter: v.Kind == module.MetricCounter})
				j = len(om.Metrics) - 1
			}
			om.Metrics[j].Value += v.Value
		}
	}
	s.ops.modules.Store(&out)
}

// stateRank orders module states from best to worst.
func stateRank(state string) int {
	switch state {
	case supervisor.StateRunning:
		return 0
	case supervisor.StateRestarting:
		return 1
	}
	return 2
}

// roomsView is the rooms as the ops layer reads them.
type roomsView struct {
	list   []ops.Room
	counts []ops.RoomCount
	lobby  int
}

// publishRooms publishes the rooms for the ops layer.
func (s *Server) publishRooms() {
	v := &roomsView{lobby: s.rooms.InLobby()}
	type key struct{ mode, state string }
	idx := make(map[key]int)
	for _, mode := range s.rooms.Modes() { // every configured mode, even without rooms
		idx[key{mode, gamemsg.RoomWaiting.String()}] = len(v.counts)
		v.counts = append(v.counts, ops.RoomCount{Mode: mode, State: gamemsg.RoomWaiting.String()})
	}
	for _, r := range s.rooms.All() {
		ri, e := r.Info(), r.Entry()
		if len(v.list) < ops.MaxRooms {
			v.list = append(v.list, ops.Room{ID: ri.ID, Name: ri.Name, Mode: ri.Mode, Map: ri.Map, State: ri.State.String(),
				Players: int(ri.Players), Capacity: int(ri.Capacity), Owner: e.Owner, Password: ri.Password})
		}
		k := key{ri.Mode, ri.State.String()}
		i, ok := idx[k]
		if !ok {
			i = len(v.counts)
			idx[k] = i
			v.counts = append(v.counts, ops.RoomCount{Mode: ri.Mode, State: k.state})
		}
		v.counts[i].Rooms++
		v.counts[i].Players += len(e.Members)
	}
	s.ops.rooms.Store(v)
}

func (s *Server) driveAgones(a *agones.Adapter, now time.Time) {
	v := s.view.Load()
	if !s.ops.agonesReady && s.ops.serving.Load() && s.modulesRunning() {
		s.ops.agonesReady = true
		// The pin, for the clients of whoever allocates this GameServer: a
		// fleet gives every GameServer a fresh identity.
		a.SetAnnotation("pin", s.Pin())
		a.SetLabel("mode", s.cfg.Match.GameMode)
		a.Ready()
	}
	if h := s.webCertAnnotation(); h != s.ops.lastWebHashes && s.ops.agonesReady {
		// The hashes browsers pin WebTransport by: set when ready, again
		// after each rotation.
		s.ops.lastWebHashes = h
		a.SetAnnotation("web-cert-hashes", h)
	}
	if v.status.Map != s.ops.lastMap {
		s.ops.lastMap = v.status.Map
		a.SetLabel("map", v.status.Map)
	}
	a.Tick(now)
}

// opsMatchEnded runs when a match ends (game thread): a match-based
// GameServer asks Agones to shut it down.
func (s *Server) opsMatchEnded() {
	if s.ops.agones != nil && s.cfg.Agones.ShutdownOnMatchEnd {
		s.log.Info("match ended: asking Agones to shut this GameServer down (agones.shutdown_on_match_end)")
		s.ops.agones.Shutdown()
	}
}

// modulesRunning reports whether every loaded module runs (game thread).
func (s *Server) modulesRunning() bool {
	for _, m := range s.mods.Modules() {
		if m.State != supervisor.StateRunning {
			return false
		}
	}
	return true
}

// opsMode is the mode the status page and metrics show: the configured
// one, or "custom" for a server whose module is not a match (its map is
// then MODULE/AREA).
func (s *Server) opsMode(v *serverView) string {
	if v.status.Mode == gamemsg.ModeCustom && s.cfg.GameMode() != gamemsg.ModeCustom {
		return "custom"
	}
	return s.cfg.Match.GameMode
}

// Snapshot is the server as the ops layer sees it (ops.Source): published
// views, atomics and the transport's counters; safe from any goroutine and
// never waits for the game thread.
func (s *Server) Snapshot() ops.Snapshot {
	v := s.view.Load()
	ts := s.loop.Stats()
	snap := ops.Snapshot{
		Name: s.cfg.Server.Name, Pin: s.Pin(), GameAddress: s.Addr().String(),
		Map: v.status.Map, Mode: s.opsMode(v), MatchState: v.status.State.String(),
		Round: v.status.Round, Started: s.start, Version: s.opts.Version,
		TickRate: ts.Rate, Ticks: ts.Ticks, LateTicks: ts.LateTicks, SkippedTicks: ts.Skipped, Serving: s.ops.serving.Load(),
		Players: v.players, PeakPlayers: v.peakPlayers, MaxPlayers: v.maxPlayers,
		ConnectionsServed: s.served.Load(),
		ChatRelayed:       s.chat.relayed.Load(), ChatDropped: s.chat.dropped.Load(), ChatRateLimited: s.chat.kicked.Load(),
		Net: s.net.AppendCounters(nil), NetHistograms: s.net.AppendHistograms(nil),
		Web: s.webSnapshot(),
	}
	if d := s.drainView.Load(); d != nil {
		snap.Draining, snap.DrainDeadline = true, d.deadline
	}
	if r := s.ops.roster.Load(); r != nil {
		snap.PlayerList = make([]ops.Player, 0, len(*r))
		for _, p := range *r {
			if st, ok := s.net.ClientStats(p.ID); ok {
				p.Ping, p.Loss, p.BandwidthUp, p.BandwidthDown = st.Ping, st.PacketLoss, st.BandwidthUp, st.BandwidthDown
				p.RTTVariance, p.Bandwidth, p.SendRate = st.RTTVariance, st.Bandwidth, st.SendRate
				p.SendQueueDelay, p.Backlogged = st.SendQueueDelay, st.Backlogged
			}
			p.Held = s.net.Held(p.ID)
			snap.PlayerList = append(snap.PlayerList, p)
		}
		sortPlayers(snap.PlayerList)
	}
	if m := s.ops.modules.Load(); m != nil {
		snap.Modules = *m
	}
	if r := s.ops.rooms.Load(); r != nil {
		snap.Rooms, snap.RoomCounts, snap.LobbyPlayers = r.list, r.counts, r.lobby
	}
	rst := s.rooms.Stats()
	snap.RoomsMax = s.rooms.Max()
	snap.RoomsOpened, snap.RoomsClosed = rst.Opened, rst.Closed
	snap.RoomPasswords = rst.Passwords
	if snap.Version == "" {
		snap.Version = "unknown"
	}
	return snap
}

func sortPlayers(p []ops.Player) {
	slices.SortFunc(p, func(a, b ops.Player) int { return cmp.Compare(a.ID, b.ID) })
}

var _ ops.Source = (*Server)(nil)
