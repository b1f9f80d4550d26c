package ops

import (
	"fmt"
	"strings"
	"time"
)

// health says whether the process is alive in the sense a liveness probe
// means: serving, and the tick loop finishing ticks. A tick loop blocked
// for longer than stall makes it unhealthy.
func (s *Server) health(now time.Time) (bool, string) {
	snap := s.cfg.Source.Snapshot()
	last := s.cfg.Tick.LastTick()
	switch {
	case last.IsZero() && now.Sub(s.started) < s.cfg.Stall:
		return true, "ok: starting, no tick yet"
	case last.IsZero():
		return false, fmt.Sprintf("unhealthy: no tick finished in the %v since the listener started", now.Sub(s.started).Round(time.Millisecond))
	case now.Sub(last) > s.cfg.Stall:
		return false, fmt.Sprintf("unhealthy: the tick loop is stuck: no tick finished for %v (ops.stall_seconds %v)",
			now.Sub(last).Round(time.Millisecond), s.cfg.Stall)
	case !snap.Serving:
		return false, "unhealthy: the server is not serving (shutting down)"
	}
	return true, fmt.Sprintf("ok: %d ticks, last %v ago", snap.Ticks, now.Sub(last).Round(time.Millisecond))
}

// ready says whether the server should get players: serving, ticking,
// and every module running (the host lists a configured module that did
// not start as failed).
func (s *Server) ready(now time.Time) (bool, string) {
	if ok, why := s.health(now); !ok {
		return false, "not ready: " + strings.TrimPrefix(why, "unhealthy: ")
	}
	snap := s.cfg.Source.Snapshot()
	if !snap.Serving {
		return false, "not ready: the server is not serving yet"
	}
	if s.cfg.Tick.LastTick().IsZero() {
		return false, "not ready: no tick yet"
	}
	if snap.Draining {
		return false, fmt.Sprintf("not ready: draining (admitting nobody; stopping by %s at the latest)", snap.DrainDeadline.UTC().Format(time.RFC3339))
	}
	var down []string
	for _, m := range snap.Modules {
		if m.State != StateRunning {
			d := fmt.Sprintf("module %s is %s", m.Name, m.State)
			if m.State == StateFailed && m.LastError != "" {
				d += ": " + m.LastError
			}
			down = append(down, d)
		}
	}
	if len(down) > 0 {
		return false, "not ready: " + strings.Join(down, "; ")
	}
	return true, fmt.Sprintf("ready: serving %d/%d players, %d modules running", snap.Players, snap.MaxPlayers, len(snap.Modules))
}
