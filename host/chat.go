package host

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Chat (ChatMessage, §9): the host relays a client's chat to every other
// admitted client with the sender's admitted name, on the game thread. The
// receive goroutine only checks the sender's budget and copies the message
// into a bounded queue; a message over budget or past a full queue is
// dropped and counted. A client that keeps sending far over its budget is
// disconnected with RateLimited.

// chatQueueSize bounds the chat messages waiting for the next tick.
const chatQueueSize = 1024

// chatLine is one accepted chat message waiting for the game thread.
type chatLine struct {
	from uint32
	text string
}

// chatBudget is one client's token bucket ("theoretical arrival time"
// form: a message is allowed while tat stays within burst intervals of now)
// and its count of refused messages in the current window.
type chatBudget struct {
	tat         time.Time
	refused     int
	windowStart time.Time
}

// chatLimits are the per-client chat limits (config [limits]).
type chatLimits struct {
	interval  time.Duration // 1 / chat_per_second
	tolerance time.Duration // (burst-1) · interval
	kickAfter int           // refusals within chatKickWindow that disconnect; 0 never
}

// chatKickWindow is the window over which refused chat messages count
// toward a RateLimited disconnect.
const chatKickWindow = time.Minute

// chatGate is the receive-side half of chat: budgets per client and the
// queue to the game thread.
type chatGate struct {
	limits chatLimits
	queue  chan chatLine

	mu      sync.Mutex
	budgets map[uint32]*chatBudget

	dropped  atomic.Uint64 // over budget or queue full
	relayed  atomic.Uint64
	kicked   atomic.Uint64
	kickFunc func(client uint32) // disconnects a client with RateLimited
}

func newChatGate(perSecond float64, burst, kickAfter int, kick func(uint32)) *chatGate {
	interval := time.Duration(float64(time.Second) / perSecond)
	return &chatGate{
		limits:   chatLimits{interval: interval, tolerance: time.Duration(burst-1) * interval, kickAfter: kickAfter},
		queue:    make(chan chatLine, chatQueueSize),
		budgets:  make(map[uint32]*chatBudget),
		kickFunc: kick,
	}
}

// receive runs on the network goroutine for every ChatMessage the transport
// validated (empty sender, text 1..256 bytes without control characters).
func (g *chatGate) receive(client uint32, _ *wire.Header, payload []byte) {
	now := time.Now()
	if !g.allow(client, now) {
		g.dropped.Add(1)
		return
	}
	m, err := gamemsg.ParseChatMessageFromClient(payload)
	if err != nil {
		return // unreachable: the transport validated it
	}
	select {
	case g.queue <- chatLine{from: client, text: m.Text}:
	default:
		g.dropped.Add(1)
	}
}

// allow charges one message to the client's budget.
func (g *chatGate) allow(client uint32, now time.Time) bool {
	g.mu.Lock()
	b := g.budgets[client]
	if b == nil {
		b = &chatBudget{tat: now, windowStart: now}
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
	if now.Sub(b.windowStart) > chatKickWindow {
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
func (g *chatGate) forget(client uint32) {
	g.mu.Lock()
	delete(g.budgets, client)
	g.mu.Unlock()
}

// relayChat sends the chat accepted since the last tick: each message to
// every admitted client but its sender, with the sender's admitted name.
func (s *Server) relayChat() {
	for {
		select {
		case line := <-s.chat.queue:
			p, ok := s.players[line.from]
			if !ok {
				continue // the sender left before the tick
			}
			s.chatBuf = gamemsg.AppendChatMessage(s.chatBuf[:0], &gamemsg.ChatMessage{Sender: p.Name, Text: line.text})
			if err := s.net.BroadcastExcept(line.from, gamemsg.TypeChatMessage, wire.Reliable, s.chatBuf); err != nil {
				s.log.Warn("chat relay failed", "from", p.Name, "err", err)
			}
			s.chat.relayed.Add(1)
		default:
			return
		}
	}
}
