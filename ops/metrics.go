package ops

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metric families the collector exports, besides the transport's
// (sparkhost_net_*), the modules' own (sparkhost_<module>_*), the tick
// histogram and the standard go_* and process_* families.
var (
	descPlayers     = desc("players", "Admitted players.")
	descPeak        = desc("players_peak", "Most players admitted at once since start.")
	descSlots       = desc("player_slots", "Client slots (server.max_clients).")
	descAdmitted    = desc("connections_admitted_total", "Clients admitted since start.")
	descChatRelayed = desc("chat_messages_relayed_total", "Chat messages relayed to the other players.")
	descChatDropped = desc("chat_messages_dropped_total", "Chat messages dropped: over the sender's budget ([limits] chat_*) or past a full queue.")
	descChatKicked  = desc("chat_rate_limited_total", "Clients disconnected (RateLimited) for flooding chat.")
	descStart       = desc("start_time_seconds", "When the server started, in seconds since the Unix epoch.")
	descTickRate    = desc("tick_rate_hertz", "Configured ticks per second.")
	descTicks       = desc("ticks_total", "Ticks run.")
	descLate        = desc("tick_late_total", "Ticks that started after their slot because an earlier tick or a stall overran.")
	descSkipped     = desc("tick_skipped_total", "Tick slots dropped, never run, because the loop fell too far behind.")
	descOverruns    = desc("tick_overruns_total", "Ticks that took longer than the tick period.")
	descLastTick    = desc("tick_last_timestamp_seconds", "When the last tick ended, in seconds since the Unix epoch.")
	descServing     = desc("serving", "1 while the game port is open and the tick loop runs.")
	descMatch       = desc("match_info", "The current match: 1 with its map, mode and state as labels.", "map", "mode", "state")
	descBuild       = desc("build_info", "1, with the program's version as a label.", "version")
	descModState    = desc("module_state", "1 for the module's current state (running, restarting, failed), 0 for the others.", "module", "state")
	descModFaults   = desc("module_faults_total", "Faults a module caused (script errors, budget overruns) since it was loaded.", "module")
	descModRestarts = desc("module_restarts_total", "Restarts of a module after crashes since it was loaded.", "module")
	descModDepth    = desc("module_inbox_depth", "Events waiting in a module's inbox.", "module")
	descModCap      = desc("module_inbox_capacity", "A module's inbox size in events.", "module")
	descModDrops    = desc("module_inbox_drops_total", "Events dropped because a module's inbox was full.", "module")
	descModTick     = desc("module_tick_seconds_total", "Time the game thread spent in a module's tick since it was loaded.", "module")
	descRooms       = desc("rooms", "Rooms open, by mode and state (waiting, playing, paused, ended).", "mode", "state")
	descRoomPlayers = desc("room_players", "Players in rooms, by mode.", "mode")
	descRoomsMax    = desc("rooms_max", "Rooms the server may hold at once (rooms.max).")
	descLobby       = desc("lobby_players", "Admitted players in no room (in the lobby).")
	descRoomsOpened = desc("rooms_opened_total", "Rooms opened since start.")
	descRoomsClosed = desc("rooms_closed_total", "Rooms closed since start.")
	descPwWrong     = desc("room_password_failures_total", "Room passwords checked that did not open the room.")
	descPwRefused   = desc("room_password_refused_total", "Room passwords refused unchecked during a room's or a source's back-off.")
	descPwKicked    = desc("room_password_kicks_total", "Clients disconnected (RateLimited) for guessing room passwords.")
	descWebSessions = desc("web_sessions", "Live web sessions (WebTransport and WebSocket).")
	descWebOpened   = desc("web_sessions_opened_total", "Web sessions opened since start.")
	descWebRefused  = desc("web_refused_total", "Web upgrades refused at web.max_sessions (session_cap) or for their Origin (origin), and TCP or QUIC connections refused at a connection cap (connection_cap).", "reason")
	descWebIdle     = desc("web_idle_closed_total", "Web sessions closed after web.idle_timeout without a datagram received.")
)

// roomStates are the states every mode's room count is exported for.
var roomStates = [...]string{"waiting", "playing", "paused", "ended"}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("sparkhost_"+name, help, labels, nil)
}

// collector turns Snapshots into metrics at scrape time. It is an unchecked
// collector (Describe sends nothing) because the transport's and the
// modules' families are only known from a snapshot.
type collector struct {
	src  Source
	tick *TickRecorder
	log  *slog.Logger

	mu     sync.Mutex
	warned map[string]bool // module metric names already reported as clashing
}

// newRegistry builds the registry /metrics serves.
func newRegistry(src Source, tick *TickRecorder, log *slog.Logger) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		&collector{src: src, tick: tick, log: log, warned: map[string]bool{}},
		tick.hist,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

func (c *collector) Describe(chan<- *prometheus.Desc) {}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(descPlayers, float64(s.Players))
	gauge(descPeak, float64(s.PeakPlayers))
	gauge(descSlots, float64(s.MaxPlayers))
	counter(descAdmitted, float64(s.ConnectionsServed))
	counter(descChatRelayed, float64(s.ChatRelayed))
	counter(descChatDropped, float64(s.ChatDropped))
	counter(descChatKicked, float64(s.ChatRateLimited))
	gauge(descStart, float64(s.Started.UnixNano())/1e9)
	gauge(descTickRate, float64(s.TickRate))
	counter(descTicks, float64(s.Ticks))
	counter(descLate, float64(s.LateTicks))
	counter(descSkipped, float64(s.SkippedTicks))
	counter(descOverruns, float64(c.tick.Overruns()))
	if last := c.tick.LastTick(); !last.IsZero() {
		gauge(descLastTick, float64(last.UnixNano())/1e9)
	}
	gauge(descServing, b2f(s.Serving))
	gauge(descMatch, 1, s.Map, s.Mode, s.MatchState)
	gauge(descBuild, 1, s.Version)
	c.collectNet(ch, s)
	c.collectRooms(gauge, counter, s)
	collectWeb(gauge, counter, s.Web)
	seen := make(map[string]bool)
	for _, m := range s.Modules {
		for _, st := range moduleStates {
			gauge(descModState, b2f(m.State == st), m.Name, st)
		}
		counter(descModFaults, float64(m.Faults), m.Name)
		counter(descModRestarts, float64(m.Restarts), m.Name)
		gauge(descModDepth, float64(m.InboxDepth), m.Name)
		gauge(descModCap, float64(m.InboxCapacity), m.Name)
		counter(descModDrops, float64(m.InboxDrops), m.Name)
		counter(descModTick, m.TickTime.Seconds(), m.Name)
		c.collectModule(ch, m, seen)
	}
}

// collectRooms exports the room counts: labels are the configured modes
// and the four states, never room ids.
func (c *collector) collectRooms(gauge, counter func(*prometheus.Desc, float64, ...string), s Snapshot) {
	type key struct{ mode, state string }
	counts := make(map[key]int)
	players := make(map[string]int)
	var modes []string
	for _, rc := range s.RoomCounts {
		if _, ok := players[rc.Mode]; !ok {
			modes = append(modes, rc.Mode)
		}
		counts[key{rc.Mode, rc.State}] += rc.Rooms
		players[rc.Mode] += rc.Players
	}
	for _, m := range modes {
		for _, st := range roomStates {
			gauge(descRooms, float64(counts[key{m, st}]), m, st)
		}
		gauge(descRoomPlayers, float64(players[m]), m)
	}
	gauge(descRoomsMax, float64(s.RoomsMax))
	gauge(descLobby, float64(s.LobbyPlayers))
	counter(descRoomsOpened, float64(s.RoomsOpened))
	counter(descRoomsClosed, float64(s.RoomsClosed))
	counter(descPwWrong, float64(s.RoomPasswords.Wrong))
	counter(descPwRefused, float64(s.RoomPasswords.Refused))
	counter(descPwKicked, float64(s.RoomPasswords.Kicked))
}

// collectNet exports the transport's counter table as sparkhost_net_*.
func (c *collector) collectNet(ch chan<- prometheus.Metric, s Snapshot) {
	descs := make(map[string]*prometheus.Desc)
	for _, n := range s.Net {
		d := descs[n.Family]
		if d == nil {
			var labels []string
			if n.LabelName != "" {
				labels = []string{n.LabelName}
			}
			d = prometheus.NewDesc("sparkhost_net_"+n.Family, n.Help, labels, nil)
			descs[n.Family] = d
		}
		var lv []string
		if n.LabelName != "" {
			lv = []string{n.LabelValue}
		}
		kind := prometheus.CounterValue
		if n.Gauge {
			kind = prometheus.GaugeValue
		}
		ch <- prometheus.MustNewConstMetric(d, kind, float64(n.Value), lv...)
	}
}

// reservedPrefixes are the host's own families: a module metric whose
// exported name starts so is skipped (and reported once), never exported
// under a name the host owns.
var reservedPrefixes = []string{"sparkhost_module_", "sparkhost_net_", "sparkhost_tick_", "sparkhost_players",
	"sparkhost_player_", "sparkhost_match_", "sparkhost_build_", "sparkhost_serving", "sparkhost_start_",
	"sparkhost_connections_", "sparkhost_events_"}

// ModuleMetricName is the exported name of a module's metric:
// sparkhost_<module>_<name>, the module name's characters other than
// letters and digits written as "_".
func ModuleMetricName(module, name string) string {
	var b strings.Builder
	b.WriteString("sparkhost_")
	for _, r := range strings.ToLower(module) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	b.WriteByte('_')
	b.WriteString(name)
	return b.String()
}

// collectModule exports a module's own metrics; seen holds the names
// exported so far, so two modules whose names map to the same one ("a-b",
// "a_b") cannot make the scrape fail with a duplicate.
func (c *collector) collectModule(ch chan<- prometheus.Metric, m Module, seen map[string]bool) {
	for _, mm := range m.Metrics {
		name := ModuleMetricName(m.Name, mm.Name)
		if seen[name] || c.reserved(name) {
			c.warnOnce(name)
			continue
		}
		seen[name] = true
		vt := prometheus.GaugeValue
		if mm.Counter {
			vt = prometheus.CounterValue
		}
		help := mm.Help
		if help == "" {
			help = "Reported by module " + m.Name + "."
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, nil, nil), vt, mm.Value)
	}
}

func (c *collector) reserved(name string) bool {
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (c *collector) warnOnce(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.warned[name] {
		c.warned[name] = true
		c.log.Warn("module metric not exported: its name clashes with the server's own metrics or another module's; rename the module or the metric", "metric", name)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// collectWeb exports the web transports' counts, when they are on.
func collectWeb(gauge, counter func(*prometheus.Desc, float64, ...string), w *Web) {
	if w == nil {
		return
	}
	gauge(descWebSessions, float64(w.Sessions))
	counter(descWebOpened, float64(w.Opened))
	counter(descWebRefused, float64(w.RefusedSessionCap), "session_cap")
	counter(descWebRefused, float64(w.RefusedOrigin), "origin")
	counter(descWebRefused, float64(w.RefusedConnections), "connection_cap")
	counter(descWebIdle, float64(w.IdleClosed))
}
