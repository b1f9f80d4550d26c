package host

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/host/rooms"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Chat (ChatMessage, §9; RoomChat, §13.5): the host relays a client's chat
// on the game thread with the sender's admitted name — a ChatMessage to the
// sender's room (every admitted client on a server that runs one match;
// the clients in the lobby for one in none), a RoomChat to its room or, if
// the operator allows it, to every admitted client; a v3 client, which has
// no RoomChat, is sent a RoomChat line as a ChatMessage. The receive goroutine
// only checks the sender's budget, one budget for both types, and copies
// the message into a bounded queue; a message over budget or past a full
// queue is dropped and counted. A client that keeps sending far over its
// budget is disconnected with RateLimited.

// chatQueueSize bounds the chat messages waiting for the next tick.
const chatQueueSize = 1024

// chatKind says how a line was sent and so whom it reaches.
type chatKind uint8

const (
	chatPlain  chatKind = iota // ChatMessage: the sender's room (or lobby)
	chatRoom                   // RoomChat, scope room
	chatGlobal                 // RoomChat, scope global
)

// chatLine is one accepted chat message waiting for the game thread.
type chatLine struct {
	from uint32
	kind chatKind
	text string
}

// budget is one client's token bucket ("theoretical arrival time" form: a
// message is allowed while tat stays within burst intervals of now) and its
// count of refused messages in the current window.
type budget struct {
	tat         time.Time
	refused     int
	windowStart time.Time
}

// budgetLimits are the per-client limits of one budget set.
type budgetLimits struct {
	interval  time.Duration // 1 / per second
	tolerance time.Duration // (burst-1) · interval
	kickAfter int           // refusals within kickWindow that disconnect; 0 never
}

// kickWindow is the window over which refused messages count toward a
// RateLimited disconnect.
const kickWindow = time.Minute

// budgetSet is the per-client budgets of one kind of message (chat, room
// requests), safe from any goroutine.
type budgetSet struct {
	limits   budgetLimits
	mu       sync.Mutex
	budgets  map[uint32]*budget
	kicked   atomic.Uint64
	kickFunc func(client uint32) // disconnects a client with RateLimited
}

func newBudgetSet(perSecond float64, burst, kickAfter int, kick func(uint32)) *budgetSet {
	interval := time.Duration(float64(time.Second) / perSecond)
	return &budgetSet{
		limits:   budgetLimits{interval: interval, tolerance: time.Duration(burst-1) * interval, kickAfter: kickAfter},
		budgets:  make(map[uint32]*budget),
		kickFunc: kick,
	}
}

// allow charges one message to the client's budget.
func (g *budgetSet) allow(client uint32, now time.Time) bool {
	g.mu.Lock()
	b := g.budgets[client]
	if b == nil {
		b = &budget{tat: now, windowStart: now}
		g.budgets[client] = b
	}
	tat := b.tat
	if tat.Before(now) {
		tat = now
	}
	if next := tat.Add(g.limits.interval); next.Sub(now) <= g.limits.tolerance+g.limits.interval {
		b.tat = next
		g.mu.Unlock()
		return true
	}
	if now.Sub(b.windowStart) > kickWindow {
		b.windowStart, b.refused = now, 0
	}
	b.refused++
	kick := g.limits.kickAfter > 0 && b.refused == g.limits.kickAfter
	g.mu.Unlock()
	if kick {
		g.kicked.Add(1)
		g.kickFunc(client)
	}
	return false
}

// forget drops a departed client's budget (game thread).
func (g *budgetSet) forget(client uint32) {
	g.mu.Lock()
	delete(g.budgets, client)
	g.mu.Unlock()
}

// chatGate is the receive-side half of chat: budgets per client and the
// queue to the game thread.
type chatGate struct {
	*budgetSet
	queue   chan chatLine
	dropped atomic.Uint64 // over budget or queue full
	relayed atomic.Uint64
}

func newChatGate(perSecond float64, burst, kickAfter int, kick func(uint32)) *chatGate {
	return &chatGate{budgetSet: newBudgetSet(perSecond, burst, kickAfter, kick), queue: make(chan chatLine, chatQueueSize)}
}

// receive runs on the network goroutine for every ChatMessage the transport
// validated (empty sender, text 1..256 bytes without control characters).
func (g *chatGate) receive(client uint32, _ *wire.Header, payload []byte) {
	if !g.allow(client, time.Now()) {
		g.dropped.Add(1)
		return
	}
	m, err := gamemsg.ParseChatMessageFromClient(payload)
	if err != nil {
		return // unreachable: the transport validated it
	}
	g.push(chatLine{from: client, kind: chatPlain, text: m.Text})
}

// receiveRoomChat is receive for RoomChat (scope, text), on the same budget.
func (g *chatGate) receiveRoomChat(client uint32, _ *wire.Header, payload []byte) {
	if !g.allow(client, time.Now()) {
		g.dropped.Add(1)
		return
	}
	m, err := gamemsg.ParseRoomChatRequest(payload)
	if err != nil {
		return // unreachable: the transport validated it
	}
	kind := chatRoom
	if m.Scope == gamemsg.ChatGlobal {
		kind = chatGlobal
	}
	g.push(chatLine{from: client, kind: kind, text: m.Text})
}

func (g *chatGate) push(line chatLine) {
	select {
	case g.queue <- line:
	default:
		g.dropped.Add(1)
	}
}

// relayChat sends the chat accepted since the last tick, each line to its
// audience but its sender, with the sender's admitted name.
func (s *Server) relayChat() {
	for {
		select {
		case line := <-s.chat.queue:
			s.relayLine(line)
		default:
			return
		}
	}
}

func (s *Server) relayLine(line chatLine) {
	p, ok := s.players[line.from]
	if !ok {
		s.drainEvents(s.now) // its admission may have come after this tick's drain
		if p, ok = s.players[line.from]; !ok {
			return // a client refused at admission (banned name)
		}
	}
	r := s.rooms.Of(line.from)
	switch line.kind {
	case chatPlain:
		s.chatBuf = gamemsg.AppendChatMessage(s.chatBuf[:0], &gamemsg.ChatMessage{Sender: p.Name, Text: line.text})
		s.rooms.Broadcast(r, line.from, gamemsg.TypeChatMessage, wire.Reliable, s.chatBuf)
	case chatRoom:
		m := gamemsg.RoomChat{Scope: gamemsg.ChatRoom, Sender: line.from, SenderName: p.Name, Text: line.text}
		if r != nil {
			m.Room = uint32(r.ID())
		}
		s.chatBuf = gamemsg.AppendRoomChat(s.chatBuf[:0], &m)
		s.rooms.Broadcast(r, line.from, gamemsg.TypeRoomChat, wire.Reliable, s.chatBuf)
		s.chatToV3(r, false, line.from, p.Name, line.text)
	case chatGlobal:
		if !s.cfg.Rooms.GlobalChat {
			s.rooms.Result(line.from, gamemsg.TypeRoomChat, gamemsg.RoomChatDisabled, 0, "the operator turned global chat off; chat to your room")
			return
		}
		m := gamemsg.RoomChat{Scope: gamemsg.ChatGlobal, Sender: line.from, SenderName: p.Name, Text: line.text}
		if r != nil {
			m.Room = uint32(r.ID())
		}
		s.chatBuf = gamemsg.AppendRoomChat(s.chatBuf[:0], &m)
		if err := s.net.BroadcastExcept(line.from, gamemsg.TypeRoomChat, wire.Reliable, s.chatBuf); err != nil {
			s.log.Warn("chat relay failed", "from", p.Name, "err", err)
		}
		s.chatToV3(r, true, line.from, p.Name, line.text)
	}
	s.chat.relayed.Add(1)
}

// chatToV3 gives the v3 clients a RoomChat line they cannot be sent, as
// the ChatMessage their protocol has: those of the sender's room r (or
// all, global) but the sender. (v3 clients are only ever admitted to a
// server that runs one match, where every client is in the one room.)
func (s *Server) chatToV3(r *rooms.Room, global bool, from uint32, name, text string) {
	var payload []byte
	for id, ci := range s.players {
		if id == from || ci.Speaks(gamemsg.TypeRoomChat) || (!global && s.rooms.Of(id) != r) {
			continue
		}
		if payload == nil {
			payload = gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Sender: name, Text: text})
		}
		s.send(id, gamemsg.TypeChatMessage, wire.Reliable, payload)
	}
}
