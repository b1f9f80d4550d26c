package netbot

import (
	"context"
	"sync"
	"time"
)

// Group plays many bots on one goroutine: one timer wakes it a few times
// per input period and it gives every bot whose input is due its turn
// (what arrived is handled, the next input sent), instead of a ticker and
// a goroutine of its own per bot, whose wake-ups dominate a process of
// thousands of bots. Bots configured with a negative
// ClientConfig.FlushInterval write their input on the group's goroutine
// too, instead of waking their connection's writer.
//
// A bot added to a Group is not Run; its end (what Run would have
// returned) is reported to the function given to Add.
type Group struct {
	ctx context.Context
	wg  sync.WaitGroup

	mu      sync.Mutex
	joining []member
	started bool
	stopped bool // the group's goroutine has ended: Add ends its bots at once
}

// member is a bot of the group, its end and when its next input is due.
type member struct {
	b   *Bot
	end func(error)
	due time.Time
}

// groupSlices is how many times per input period the group wakes: a bot's
// input leaves within a period/groupSlices of when it is due, and the
// inputs of bots that joined at different times stay spread over the
// period instead of leaving in one burst.
const groupSlices = 8

// NewGroup returns a group whose bots play until ctx ends.
func NewGroup(ctx context.Context) *Group { return &Group{ctx: ctx} }

// Add makes b play in the group from now on; b comes from Dial (and
// EnterRoom) and is not Run. end is called once, on a goroutine of its own,
// with nil when ctx ended (the bot left with ClientQuit) or an error
// matching ErrDropped when the server ended its connection and it could not
// resume. The group's timer is set from the first bot's input rate.
func (g *Group) Add(b *Bot, end func(error)) {
	g.wg.Add(1)
	g.join(member{b: b, end: end})
}

// Wait returns once every bot added has ended.
func (g *Group) Wait() { g.wg.Wait() }

// join queues m for the group's goroutine (started by the first), or
// ends it if the group has stopped.
func (g *Group) join(m member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		go g.leave(m)
		return
	}
	g.joining = append(g.joining, m)
	if !g.started {
		g.started = true
		go g.run(max(m.b.period/groupSlices, time.Millisecond))
	}
}

// run is the group's goroutine.
func (g *Group) run(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var live []member
	for {
		select {
		case <-g.ctx.Done():
			g.mu.Lock()
			g.stopped = true
			live = append(live, g.joining...)
			g.joining = nil
			g.mu.Unlock()
			for _, m := range live {
				go g.leave(m) // a ClientQuit waits for its Acks: side by side
			}
			return
		case <-t.C:
		}
		live = g.turns(g.take(live), time.Now())
	}
}

// take adds the bots that joined since the last wake to live, due now.
func (g *Group) take(live []member) []member {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	for _, m := range g.joining {
		m.due = now
		live = append(live, m)
	}
	clear(g.joining)
	g.joining = g.joining[:0]
	return live
}

// turns gives every bot due by now its turn and returns the bots still
// playing; a bot whose connection ended is handed to a goroutine that
// resumes it or ends it.
func (g *Group) turns(live []member, now time.Time) []member {
	kept := live[:0]
	for _, m := range live {
		select {
		case <-m.b.client().Done():
			go g.rejoin(m)
			continue
		default:
		}
		if !now.Before(m.due) {
			m.b.turn()
			// As a ticker: a late turn does not bring the next one
			// forward by more than the one owed.
			if m.due = m.due.Add(m.b.period); m.due.Before(now) {
				m.due = now
			}
		}
		kept = append(kept, m)
	}
	clear(live[len(kept):])
	return kept
}

// rejoin brings a bot whose connection ended back to its seat and into
// the group, or ends it.
func (g *Group) rejoin(m member) {
	if m.b.resume(g.ctx) {
		g.join(m)
		return
	}
	g.finish(m, m.b.dropped())
}

// leave ends a bot when the group's context ended.
func (g *Group) leave(m member) {
	m.b.client().Close()
	g.finish(m, nil)
}

func (g *Group) finish(m member, err error) {
	if m.end != nil {
		m.end(err)
	}
	g.wg.Done()
}
