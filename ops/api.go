package ops

import (
	"net/http"
	"time"
)

// statusJSON is /status and /api/status: what the page's header and
// tables show, and the identity pin a fleet's tooling hands clients.
type statusJSON struct {
	Name              string       `json:"name"`
	Version           string       `json:"version"`
	Pin               string       `json:"pin"`          // the identity clients pin (docs/protocol.md §8)
	GameAddress       string       `json:"game_address"` // where the game port is bound (behind NAT, not what clients dial)
	Map               string       `json:"map"`
	Mode              string       `json:"mode"`
	MatchState        string       `json:"match_state"`
	Round             int          `json:"round"`
	UptimeSeconds     float64      `json:"uptime_seconds"`
	TickRate          int          `json:"tick_rate"`
	Ticks             uint64       `json:"ticks"`
	TickOverruns      uint64       `json:"tick_overruns"`
	Players           int          `json:"players"`
	MaxPlayers        int          `json:"max_players"`
	PeakPlayers       int          `json:"peak_players"`
	ConnectionsServed uint64       `json:"connections_served"`
	BytesIn           uint64       `json:"bytes_in"`
	BytesOut          uint64       `json:"bytes_out"`
	Dropped           uint64       `json:"dropped"`
	Healthy           bool         `json:"healthy"`
	Health            string       `json:"health"`
	Ready             bool         `json:"ready"`
	Draining          bool         `json:"draining"`                 // admitting nobody, stopping once matches end
	DrainDeadline     *time.Time   `json:"drain_deadline,omitempty"` // while draining: when it stops at the latest
	Readiness         string       `json:"readiness"`
	Modules           []moduleJSON `json:"modules"`
	PlayerList        []playerJSON `json:"player_list"`
	Rooms             []roomJSON   `json:"rooms"`
	RoomsMax          int          `json:"rooms_max"`
	LobbyPlayers      int          `json:"lobby_players"`
	Web               *webJSON     `json:"web,omitempty"` // the web transports; absent when off
}

// webJSON is the web transports in /status: where browsers connect and
// the certificate hashes their serverCertificateHashes take.
type webJSON struct {
	Port         int      `json:"port"`
	WebTransport string   `json:"webtransport,omitempty"` // the path, when served
	WebSocket    string   `json:"websocket,omitempty"`
	TLS          bool     `json:"tls"`
	CertHashes   []string `json:"cert_hashes"` // sha-256, standard base64; served first
	Sessions     int      `json:"sessions"`
	Opened       uint64   `json:"sessions_opened"`
	Refused      uint64   `json:"refused"`
}

func webStatus(w *Web) *webJSON {
	if w == nil {
		return nil
	}
	out := &webJSON{Port: w.Port, TLS: w.TLS, CertHashes: append([]string{}, w.CertHashes...),
		Sessions: w.Sessions, Opened: w.Opened, Refused: w.RefusedSessionCap + w.RefusedOrigin + w.RefusedConnections}
	if w.WebTransport {
		out.WebTransport = "/wt"
	}
	if w.WebSocket {
		out.WebSocket = "/ws"
	}
	return out
}

type roomJSON struct {
	ID       uint32 `json:"id"`
	Name     string `json:"name"`
	Mode     string `json:"mode"`
	Map      string `json:"map"`
	State    string `json:"state"`
	Players  int    `json:"players"`
	Capacity int    `json:"capacity"`
	Owner    uint32 `json:"owner"`
	Password bool   `json:"password"`
}

type moduleJSON struct {
	Name          string       `json:"name"`
	Kind          string       `json:"kind"`
	Version       string       `json:"version"`
	State         string       `json:"state"`
	Faults        uint64       `json:"faults"`
	Restarts      uint64       `json:"restarts"`
	InboxDepth    int          `json:"inbox_depth"`
	InboxCapacity int          `json:"inbox_capacity"`
	InboxDrops    uint64       `json:"inbox_drops"`
	TickSeconds   float64      `json:"tick_seconds"`
	LastError     string       `json:"last_error,omitempty"`
	Metrics       []metricJSON `json:"metrics"`
}

type metricJSON struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

type playerJSON struct {
	ID     uint32  `json:"id"`
	Name   string  `json:"name"`
	PingMS float64 `json:"ping_ms"`
	Loss   float64 `json:"loss"`
	Up     float64 `json:"up"`
	Down   float64 `json:"down"`
	// Congestion control (docs/operations.md, "Send rate").
	RTTVarMS     float64 `json:"rtt_var_ms"`
	Bandwidth    float64 `json:"bandwidth"` // estimated bytes/s toward the player (0: not yet)
	SendRate     float64 `json:"send_rate"` // the pacing rate, bytes/s (0: not paced)
	QueueDelayMS float64 `json:"queue_delay_ms"`
	Backlogged   bool    `json:"backlogged"`
	Held         bool    `json:"held"` // away: its seat held for a resumption
}

func (s *Server) serveStatus(w http.ResponseWriter, _ *http.Request) {
	now := time.Now()
	snap := s.cfg.Source.Snapshot()
	out := statusJSON{
		Name: snap.Name, Version: snap.Version, Pin: snap.Pin, GameAddress: snap.GameAddress,
		Map: snap.Map, Mode: snap.Mode, MatchState: snap.MatchState, Round: snap.Round,
		UptimeSeconds: now.Sub(snap.Started).Seconds(), TickRate: snap.TickRate, Ticks: snap.Ticks, TickOverruns: s.cfg.Tick.Overruns(),
		Players: snap.Players, MaxPlayers: snap.MaxPlayers, PeakPlayers: snap.PeakPlayers, ConnectionsServed: snap.ConnectionsServed,
		Modules: []moduleJSON{}, PlayerList: []playerJSON{}, Rooms: []roomJSON{},
		RoomsMax: snap.RoomsMax, LobbyPlayers: snap.LobbyPlayers, Draining: snap.Draining, Web: webStatus(snap.Web),
	}
	if snap.Draining {
		d := snap.DrainDeadline.UTC()
		out.DrainDeadline = &d
	}
	for _, r := range snap.Rooms {
		out.Rooms = append(out.Rooms, roomJSON{ID: r.ID, Name: r.Name, Mode: r.Mode, Map: r.Map, State: r.State,
			Players: r.Players, Capacity: r.Capacity, Owner: r.Owner, Password: r.Password})
	}
	for _, n := range snap.Net {
		switch n.Family {
		case "bytes_received_total":
			out.BytesIn += n.Value
		case "bytes_sent_total":
			out.BytesOut += n.Value
		case "datagrams_dropped_total", "inbox_drops_total":
			out.Dropped += n.Value
		}
	}
	out.Healthy, out.Health = s.health(now)
	out.Ready, out.Readiness = s.ready(now)
	for _, m := range snap.Modules {
		mj := moduleJSON{Name: m.Name, Kind: m.Kind, Version: m.Version, State: m.State, Faults: m.Faults, Restarts: m.Restarts,
			InboxDepth: m.InboxDepth, InboxCapacity: m.InboxCapacity, InboxDrops: m.InboxDrops,
			TickSeconds: m.TickTime.Seconds(), LastError: m.LastError, Metrics: []metricJSON{}}
		for _, mm := range m.Metrics {
			mj.Metrics = append(mj.Metrics, metricJSON{Name: mm.Name, Value: mm.Value})
		}
		out.Modules = append(out.Modules, mj)
	}
	for _, p := range snap.PlayerList {
		out.PlayerList = append(out.PlayerList, playerJSON{ID: p.ID, Name: p.Name, PingMS: ms(p.Ping), Loss: p.Loss,
			Up: p.BandwidthUp, Down: p.BandwidthDown, RTTVarMS: ms(p.RTTVariance), Bandwidth: p.Bandwidth, SendRate: p.SendRate,
			QueueDelayMS: ms(p.SendQueueDelay), Backlogged: p.Backlogged, Held: p.Held})
	}
	writeJSON(w, out)
}

// historyJSON is /api/history: the samples as columns, oldest first.
type historyJSON struct {
	Period   float64   `json:"period"` // seconds between samples
	TickRate int       `json:"tick_rate"`
	Time     []int64   `json:"t"` // unix milliseconds
	TickAvg  []float64 `json:"tick_avg_ms"`
	TickPeak []float64 `json:"tick_peak_ms"`
	Players  []int     `json:"players"`
	BytesIn  []float64 `json:"bytes_in"`
	BytesOut []float64 `json:"bytes_out"`
	Drops    []float64 `json:"drops"`
}

func (s *Server) serveHistory(w http.ResponseWriter, _ *http.Request) {
	samples := s.hist.Samples()
	n := len(samples)
	h := historyJSON{Period: s.cfg.SampleEvery.Seconds(), TickRate: s.cfg.Source.Snapshot().TickRate,
		Time: make([]int64, n), TickAvg: make([]float64, n), TickPeak: make([]float64, n), Players: make([]int, n),
		BytesIn: make([]float64, n), BytesOut: make([]float64, n), Drops: make([]float64, n)}
	for i, x := range samples {
		h.Time[i], h.TickAvg[i], h.TickPeak[i], h.Players[i] = x.Time.UnixMilli(), x.TickAvgMS, x.TickPeakMS, x.Players
		h.BytesIn[i], h.BytesOut[i], h.Drops[i] = x.BytesIn, x.BytesOut, x.Drops
	}
	writeJSON(w, h)
}
