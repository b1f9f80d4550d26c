package host

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/rooms"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Draining (docs/operations.md, "Draining"): the server stops admitting,
// says so (refusals, /readyz, discovery, the status page, Agones), lets
// each match in progress run to its end and each room whose module is not
// a match (the mmo, which hands its characters to a neighbour area server)
// empty itself, then lets every remaining player go with
// Disconnect(ServerDraining) and stops: Run returns nil. The deadline ends
// it sooner.

// DefaultDrainDeadline is how long `drain` without an argument waits at
// most.
const DefaultDrainDeadline = 5 * time.Minute

// maxDrainDeadline bounds the deadline an operator may give.
const maxDrainDeadline = 24 * time.Hour

// Sentences players are shown.
const (
	drainRefusal  = "the server is restarting; connect to another server"
	drainMatchEnd = "the match is over and the server is restarting; connect to another server"
	drainDeadline = "the server is restarting now; connect to another server"
)

// drainState is the drain (game thread), and what other goroutines read.
type drainState struct {
	on       bool
	began    time.Time
	deadline time.Time
	released map[uint32]bool // players already let go
	// ended is each room's MatchesEnded when the drain first saw it: once
	// it grows, the match the drain waited for is over.
	ended map[module.RoomID]uint64
	done  bool
	// stop ends Run; set by Run.
	stop context.CancelFunc
}

// registerDrain adds the drain command.
func (s *Server) registerDrain() {
	c := admin.Command{Name: "drain", Usage: "[DEADLINE|cancel]", Owner: "builtin",
		Help: "stop admitting, let matches end (the mmo hands characters over), then stop; DEADLINE like 90s or 5m (default 5m); cancel calls it off",
		Run:  s.cmdDrain}
	if err := s.cmds.Register(c); err != nil {
		panic(err)
	}
}

func (s *Server) cmdDrain(args []string) (string, error) {
	if len(args) > 1 {
		return "", errors.New("usage: drain [DEADLINE|cancel]")
	}
	if len(args) == 1 && args[0] == "cancel" {
		return s.cancelDrain()
	}
	d := DefaultDrainDeadline
	if len(args) == 1 {
		var err error
		if d, err = parseDeadline(args[0]); err != nil {
			return "", err
		}
	}
	return s.beginDrain(d, s.now), nil
}

// parseDeadline reads "90s", "5m" or plain seconds.
func parseDeadline(arg string) (time.Duration, error) {
	d, err := time.ParseDuration(arg)
	if err != nil {
		secs, ferr := strconv.ParseFloat(arg, 64)
		if ferr != nil {
			return 0, fmt.Errorf("drain: %q is not a deadline: give a duration like 90s or 5m", arg)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d <= 0 || d > maxDrainDeadline {
		return 0, fmt.Errorf("drain: the deadline %v must be above 0 and at most %v", d, maxDrainDeadline)
	}
	return d, nil
}

// beginDrain starts the drain (or moves its deadline) and says what it
// waits for.
func (s *Server) beginDrain(d time.Duration, now time.Time) string {
	dr := &s.drain
	dr.deadline = now.Add(d)
	if !dr.on {
		dr.on, dr.began, dr.released, dr.ended = true, now, make(map[uint32]bool), make(map[module.RoomID]uint64)
		s.net.SetDraining(drainRefusal)
		s.log.Info("draining: new players are refused; matches in progress run to their end, then the server stops",
			"deadline", d.String(), "players", len(s.players))
		if a := s.ops.agones; a != nil {
			a.SetLabel("draining", "true")
		}
	}
	s.mods.SetDraining(true, dr.deadline)
	s.publishDrain()
	return "draining: new players are refused; the server stops when " + s.drainWaits(now) +
		", at the latest in " + d.Round(time.Second).String() + " (drain cancel calls it off)"
}

// cancelDrain calls the drain off: admissions resume. Players already let
// go stay gone.
func (s *Server) cancelDrain() (string, error) {
	if !s.drain.on {
		return "", errors.New("drain: the server is not draining")
	}
	if s.drain.done {
		return "", errors.New("drain: too late, the server is stopping")
	}
	s.drain = drainState{stop: s.drain.stop}
	s.net.SetDraining("")
	s.mods.SetDraining(false, time.Time{})
	if a := s.ops.agones; a != nil {
		a.SetLabel("draining", "false")
	}
	s.publishDrain()
	s.log.Info("drain called off: admitting players again")
	return "drain called off: admitting players again", nil
}

// drainStep runs each tick while draining: players of rooms the drain no
// longer waits for are let go; once none is left, or at the deadline, the
// server stops.
func (s *Server) drainStep(now time.Time) {
	dr := &s.drain
	if !dr.on || dr.done {
		return
	}
	late := !now.Before(dr.deadline)
	waiting := make(map[uint32]bool)
	if !late {
		for _, r := range s.rooms.All() {
			if s.drainWaitsFor(r) {
				for _, id := range r.Entry().Members {
					waiting[id] = true
				}
			}
		}
	}
	for id := range s.players {
		if waiting[id] || dr.released[id] {
			continue
		}
		dr.released[id] = true
		detail := drainMatchEnd
		if late {
			detail = drainDeadline
		}
		_ = s.net.Kick(id, wire.DisconnectServerDraining, detail)
	}
	if len(waiting) > 0 && !late {
		return
	}
	dr.done = true
	s.log.Info("drained: stopping", "took", now.Sub(dr.began).Round(time.Millisecond), "deadline_reached", late,
		"players_let_go", len(dr.released))
	if a := s.ops.agones; a != nil {
		a.Shutdown()
	}
	if dr.stop != nil {
		dr.stop()
	}
}

// drainWaitsFor reports whether the drain still waits for room r: its
// match that was in progress has not ended yet, or its world has players.
func (s *Server) drainWaitsFor(r *rooms.Room) bool {
	n, seen := s.drain.ended[r.ID()]
	if !seen {
		s.drain.ended[r.ID()] = r.MatchesEnded()
		n = r.MatchesEnded()
	}
	return r.DrainWaits() && r.MatchesEnded() == n
}

// drainWaits says what the drain waits for.
func (s *Server) drainWaits(time.Time) string {
	waiting, players := 0, 0
	for _, r := range s.rooms.All() {
		if s.drainWaitsFor(r) {
			waiting++
			players += len(r.Entry().Members)
		}
	}
	if waiting == 0 {
		return "its players are let go"
	}
	return fmt.Sprintf("%d room(s) with %d player(s) are done (a match ends; a world such as the mmo's hands its players over)", waiting, players)
}

// drainLine is the status line of a drain ("" when not draining).
func (s *Server) drainLine(now time.Time) string {
	dr := &s.drain
	if !dr.on {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "draining for %v, deadline in %v: waiting for ", now.Sub(dr.began).Round(time.Second),
		max(dr.deadline.Sub(now), 0).Round(time.Second))
	n := 0
	for _, r := range s.rooms.All() {
		if !s.drainWaitsFor(r) {
			continue
		}
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		ph := r.Phase()
		fmt.Fprintf(&b, "room %d (%s, %d players, %s)", r.ID(), ph.Map, len(r.Entry().Members), ph.State)
	}
	if n == 0 {
		b.WriteString("nothing (stopping)")
	}
	return b.String()
}

// publishDrain publishes the drain for the ops layer and discovery.
func (s *Server) publishDrain() {
	if !s.drain.on {
		s.drainView.Store(nil)
		return
	}
	v := drainView{began: s.drain.began, deadline: s.drain.deadline}
	s.drainView.Store(&v)
}

// drainView is the drain as other goroutines read it.
type drainView struct {
	began, deadline time.Time
}

// drainingName is the name LAN discovery announces while draining: the
// server's, marked, within the 64 bytes a name may have.
func drainingName(name string) string {
	const mark = " (draining)"
	for len(name)+len(mark) > 64 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name + mark
}
