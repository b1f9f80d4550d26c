package host

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/host/rooms"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The glue between the server and its rooms (host/rooms, where a room
// lives: its match, world, requests, passwords and console commands). The
// server owns what the rooms use: the game thread, the players, the
// transport and the console. Room requests arrive here first: the
// transport has validated each against its schema and structural check
// before the handler runs; the receive goroutine charges the client's
// request budget ([rooms] requests_per_second, request_burst) and copies
// the request into a bounded queue (full or over budget: dropped and
// counted, never blocking). The game thread hands each to the rooms.

// requestQueueSize bounds the room requests waiting for the next tick.
const requestQueueSize = 1024

// roomRequest is one accepted request waiting for the game thread.
type roomRequest struct {
	client  uint32
	typ     wire.MessageType
	payload []byte // a copy
}

// requestGate is the receive side of room requests.
type requestGate struct {
	*budgetSet
	queue   chan roomRequest
	dropped atomic.Uint64
}

func newRequestGate(perSecond float64, burst, kickAfter int, kick func(uint32)) *requestGate {
	return &requestGate{budgetSet: newBudgetSet(perSecond, burst, kickAfter, kick), queue: make(chan roomRequest, requestQueueSize)}
}

// receive runs on a network goroutine for every validated room request.
func (g *requestGate) receive(client uint32, h *wire.Header, payload []byte) {
	if !g.allow(client, time.Now()) {
		g.dropped.Add(1)
		return
	}
	select {
	case g.queue <- roomRequest{client: client, typ: h.Type, payload: append([]byte(nil), payload...)}:
	default:
		g.dropped.Add(1)
	}
}

// newRooms builds the server's rooms on what the server owns (after the
// transport, the tick loop and the module manager).
func (s *Server) newRooms() *rooms.Set {
	return rooms.New(rooms.Config{
		Settings: s.cfg, Log: s.log, Net: s.net, Modules: s.mods, Commands: s.cmds,
		Player:     func(c uint32) netstack.ClientInfo { return s.players[c] },
		FindPlayer: s.findPlayer,
		Send:       s.send,
		Now:        func() time.Time { return s.now },
		Ticks:      func() uint64 { return s.loop.Stats().Ticks },
		Notice:     s.consoleNotice,
		MatchEnded: s.opsMatchEnded,
	})
}

// openRooms opens the server's one room (no lobby), where specs run, or
// resolves the modes rooms may run (a lobby), specs running for the whole
// server.
func (s *Server) openRooms(specs []supervisor.Spec) error {
	if !s.cfg.Rooms.Enabled {
		return s.rooms.OpenFixed(specs, s.start)
	}
	names := make([]string, 0, len(s.cfg.Rooms.Modes))
	modes := make(map[string]supervisor.Spec, len(s.cfg.Rooms.Modes))
	for _, arg := range s.cfg.Rooms.Modes {
		spec, err := s.resolveModule(arg)
		if err != nil {
			return fmt.Errorf("rooms.modes: %w", err)
		}
		name, err := s.modeName(arg, spec)
		if err != nil {
			return fmt.Errorf("rooms.modes: %s: %w", arg, err)
		}
		if _, dup := modes[name]; dup {
			return fmt.Errorf("rooms.modes: %s is a second module named %q; offer each mode once", arg, name)
		}
		modes[name] = spec
		names = append(names, name)
	}
	s.rooms.SetModes(names, modes)
	return nil
}

// runRoomRequests hands the rooms the requests that arrived since the last
// tick, then lets them tell room owners of wrong passwords.
func (s *Server) runRoomRequests() {
	defer s.rooms.PasswordNotices()
	for {
		select {
		case req := <-s.roomReqs.queue:
			if _, ok := s.players[req.client]; !ok {
				s.drainEvents(s.now) // its admission may have come after this tick's drain
			}
			if _, ok := s.players[req.client]; ok { // not a client that left before the tick
				s.rooms.Request(req.client, req.typ, req.payload)
			}
		default:
			return
		}
	}
}

// send sends one message to one client; a departed client is no error,
// and a client whose protocol does not define t (a v3 client and the room
// messages, docs/protocol.md §3.2) is not sent it.
func (s *Server) send(client uint32, t wire.MessageType, ch wire.Channel, payload []byte) {
	if !s.players[client].Speaks(t) {
		return
	}
	if err := s.net.Send(client, t, ch, payload); err != nil && !errors.Is(err, netstack.ErrNoSuchClient) && !errors.Is(err, netstack.ErrServerClosed) {
		s.log.Warn("send failed", "type", t.String(), "client", client, "err", err)
	}
}

// consoleNotice shows an operator at the interactive console a line (the
// log has it too).
func (s *Server) consoleNotice(line string) {
	if s.opts.Console != nil && s.opts.ConsoleOut != nil {
		fmt.Fprintln(s.opts.ConsoleOut, line)
	}
}
