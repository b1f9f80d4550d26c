package deathmatch

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/match"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// fakeHost is the server as the module sees it through the SDK, in
// process: a module.Host whose scoreboard and match are the host's own
// (host/match), whose sends are validated against the schemas as the SDK
// does and handed to a callback, and whose match announcements are
// delivered to the module after the next step's inputs, as the real host
// delivers them (late events, after the inbox).
type fakeHost struct {
	// Host is nil: what the module does not use (timers, KV) panics if
	// called. The entity API is fakeEntities (entities_test.go).
	module.Host
	entities *fakeEntities

	tb      testing.TB
	now     time.Time
	server  module.ServerInfo
	clients map[uint32]module.ClientInfo
	match   *match.Match
	reg     *wire.Registry

	onSend       func(client uint32, t wire.MessageType, payload []byte)
	pending      []func(m plugin.Module)
	faults       []error
	expectFaults bool // else a fault fails the test

	starts     []gamemsg.MatchStart
	ends       []gamemsg.MatchEnd
	endScores  [][]gamemsg.ScoreEntry // the scoreboard as announced last before each MatchEnd
	mapChanges []string
	lastScores []gamemsg.ScoreEntry
	scoreCalls int
}

var _ module.Host = (*fakeHost)(nil)
var _ match.Announcer = (*fakeHost)(nil)

func newFakeHost(tb testing.TB, mode gamemsg.GameMode, cfg match.Config) *fakeHost {
	tb.Helper()
	h := &fakeHost{
		tb: tb, now: time.Unix(1_700_000_000, 0), clients: make(map[uint32]module.ClientInfo), reg: gamemsg.NewRegistry(),
		server: module.ServerInfo{Name: "sim", Mode: mode, TickRate: 60, MaxPlayers: 256, DataDir: tb.TempDir()},
	}
	for _, s := range schemas {
		if err := h.reg.Register(Name, s); err != nil {
			tb.Fatal(err)
		}
	}
	cfg.Mode = mode
	m, err := match.New(cfg, h, h.now)
	if err != nil {
		tb.Fatal(err)
	}
	h.match = m
	h.pending, h.mapChanges = nil, nil // the first map is the one Load reads from Server()
	h.sync()
	return h
}

// sync publishes the match state as Server() reports it.
func (h *fakeHost) sync() {
	st := h.match.Phase(h.now)
	h.server.Map, h.server.MatchState, h.server.Players = st.Map, st.State, len(h.clients)
}

// Announcer.

func (h *fakeHost) MatchStart(ms gamemsg.MatchStart) {
	h.starts = append(h.starts, ms)
	h.pending = append(h.pending, func(m plugin.Module) { m.OnMatchStart(ms) })
}

func (h *fakeHost) MatchEnd(me gamemsg.MatchEnd) {
	h.ends = append(h.ends, me)
	h.endScores = append(h.endScores, h.lastScores)
	h.pending = append(h.pending, func(m plugin.Module) { m.OnMatchEnd(me) })
}

func (h *fakeHost) ScoreUpdate(su gamemsg.ScoreUpdate) { h.lastScores = su.Scores }

func (h *fakeHost) MapChanged(name string, index int) {
	h.mapChanges = append(h.mapChanges, name)
	h.pending = append(h.pending, func(m plugin.Module) { m.OnMapChange(name, index) })
}

// module.Host.

func (h *fakeHost) check(t wire.MessageType, payload []byte) error {
	s, _, ok := h.reg.Lookup(t)
	if !ok {
		return wire.ErrUnknownType
	}
	hdr := wire.Header{Type: t, Channel: s.Channel}
	return h.reg.Validate(wire.ServerToClient, &hdr, payload)
}

func (h *fakeHost) Send(client uint32, t wire.MessageType, payload []byte) error {
	if err := h.check(t, payload); err != nil {
		return err
	}
	if _, ok := h.clients[client]; ok && h.onSend != nil {
		h.onSend(client, t, payload)
	}
	return nil
}

func (h *fakeHost) Broadcast(t wire.MessageType, payload []byte) error {
	return h.BroadcastExcept(0, t, payload)
}

func (h *fakeHost) BroadcastExcept(except uint32, t wire.MessageType, payload []byte) error {
	if err := h.check(t, payload); err != nil {
		return err
	}
	for id := range h.clients {
		if id != except && h.onSend != nil {
			h.onSend(id, t, payload)
		}
	}
	return nil
}

func (h *fakeHost) Kick(uint32, string) error { return errors.New("fake host: no kicks") }

func (h *fakeHost) SetArea(string) error { return nil }

func (h *fakeHost) AddScore(client uint32, score, kills, deaths int32) {
	h.scoreCalls++
	h.match.AddScore(client, score, kills, deaths, h.now)
}

func (h *fakeHost) Fault(err error) {
	h.faults = append(h.faults, err)
	if !h.expectFaults {
		h.tb.Errorf("module fault: %v", err)
	}
}

func (h *fakeHost) Log() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (h *fakeHost) Client(id uint32) (module.ClientInfo, bool) {
	c, ok := h.clients[id]
	return c, ok
}

func (h *fakeHost) Clients() []module.ClientInfo {
	var out []module.ClientInfo
	for id := uint32(0); len(out) < len(h.clients); id++ {
		if c, ok := h.clients[id]; ok {
			out = append(out, c)
		}
	}
	return out
}

func (h *fakeHost) Server() module.ServerInfo { return h.server }
func (h *fakeHost) Now() time.Time            { return h.now }

// admit adds a client as the host does: the match's scoreboard, then the
// module.
func (h *fakeHost) admit(m plugin.Module, id uint32, name string) {
	c := module.ClientInfo{ID: id, Name: name}
	h.clients[id] = c
	h.match.PlayerJoined(id, h.now)
	m.OnAdmitted(c)
}

// leave removes a client as the host does.
func (h *fakeHost) leave(m plugin.Module, id uint32) {
	c := h.clients[id]
	delete(h.clients, id)
	h.match.PlayerLeft(id, h.now)
	m.OnLeft(c, wire.DisconnectClientQuit)
}

// beginTick advances the clock by one tick and runs the match, as the
// host's step does before the modules' batch.
func (h *fakeHost) beginTick() {
	h.now = h.now.Add(time.Second / time.Duration(h.server.TickRate))
	h.match.Tick(h.now)
	h.sync()
}

// deliverLate hands the module the match events announced since the last
// delivery; the host puts them after the inbox in a module's batch.
func (h *fakeHost) deliverLate(m plugin.Module) {
	for len(h.pending) > 0 {
		ev := h.pending[0]
		h.pending = h.pending[1:]
		ev(m)
	}
}

// SetMetric and AddMetric accept the module's metrics (the real SDK checks
// their names against the manifest; see plugin's tests).
func (h *fakeHost) SetMetric(string, float64) error { return nil }

// AddMetric: see SetMetric.
func (h *fakeHost) AddMetric(string, float64) error { return nil }
