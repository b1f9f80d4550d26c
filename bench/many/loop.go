package main

import (
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// meter is a process's count of echoes in the measured window.
type meter struct {
	measuring atomic.Bool
	count     atomic.Uint64
}

// loop is one client's messages in flight: slot i's message carries its
// send time, i and the slot's generation, so that an echo of a message
// given up for lost (unreliable) is told from the echo of its successor.
type loop struct {
	c          *netstack.Client
	o          clientOpts
	m          *meter
	h          hist     // round trips (µs) of the window's echoes
	sent       []int64  // each slot's send time (unix ns)
	gen        []uint16 // each slot's generation
	payload    []byte
	lost, late uint64    // in the window: given up for lost, echoed after that
	echoes     uint64    // in the window: taken
	at         time.Time // the engine's pass time, which its sends use (zero: Send reads the clock)
}

// rttEvery: the round trip of one echo in rttEvery goes into the histogram.
const rttEvery = 8

func newLoop(c *netstack.Client, o clientOpts, m *meter) *loop {
	return &loop{c: c, o: o, m: m, h: newHist(), sent: make([]int64, o.inflight), gen: make([]uint16, o.inflight),
		payload: make([]byte, o.size)}
}

// send queues a new message on slot i.
func (l *loop) send(i int, now int64) bool {
	l.gen[i]++
	l.sent[i] = now
	binary.LittleEndian.PutUint64(l.payload, uint64(now))
	binary.LittleEndian.PutUint16(l.payload[8:], uint16(i))
	binary.LittleEndian.PutUint16(l.payload[10:], l.gen[i])
	if !l.at.IsZero() {
		return l.c.SendAt(echoType, l.o.channel, l.payload, l.at) == nil
	}
	return l.c.Send(echoType, l.o.channel, l.payload) == nil
}

// echo takes an echo: the round trip of its slot's current message is
// counted and the slot gets a new message; an echo of a message given up
// for lost is only counted late.
func (l *loop) echo(p []byte, now int64) bool {
	i := int(binary.LittleEndian.Uint16(p[8:]))
	if i >= len(l.gen) || l.gen[i] != binary.LittleEndian.Uint16(p[10:]) {
		if l.m.measuring.Load() {
			l.late++
		}
		return true
	}
	if l.m.measuring.Load() {
		// Every echo counts; the round trip of one in rttEvery is kept
		// (hundreds of thousands a window: the percentiles of all of
		// them, at an eighth of the histogram's logarithms).
		if l.echoes++; l.echoes%rttEvery == 0 {
			l.h.add((now - l.sent[i]) / 1000)
		}
		l.m.count.Add(1)
	}
	return l.send(i, now)
}

// expire gives up every message older than -loss-after and sends a new
// one in its slot, so that -inflight stay in flight however many are lost.
func (l *loop) expire(now int64) bool {
	for i, t := range l.sent {
		if now-t < int64(l.o.lossAfter) {
			continue
		}
		if l.m.measuring.Load() {
			l.lost++
		}
		if !l.send(i, now) {
			return false
		}
	}
	return true
}

// run keeps the messages in flight until ctx ends. As a game client answers
// once per frame, it takes every echo that has arrived, sends as many new
// messages and flushes once, so that they share datagrams. wake gives the
// context a wait for echoes ends with: ctx itself, or (unreliable) one that
// ends every few tens of milliseconds, so that lost messages are replaced
// even when no echo comes.
func (l *loop) run(ctx context.Context, wake func() context.Context) {
	now := time.Now().UnixNano()
	for i := range l.sent {
		if !l.send(i, now) {
			return
		}
	}
	l.c.FlushNow()
	polled, stop := context.WithCancel(ctx)
	stop() // Receive with it takes only what has arrived
	unreliable := l.o.channel == wire.Unreliable
	for {
		m, err := l.c.Receive(wake())
		for err == nil {
			if m.Header.Type == echoType && len(m.Payload) >= 12 && !l.echo(m.Payload, time.Now().UnixNano()) {
				return
			}
			m, err = l.c.Receive(polled)
		}
		if ctx.Err() != nil || !errors.Is(err, context.Canceled) {
			return
		}
		if unreliable && !l.expire(time.Now().UnixNano()) {
			return
		}
		l.c.FlushNow()
	}
}

// ticker returns a function giving a context that ends at the next tick of
// every (or with parent): many goroutines wait on one timer.
func ticker(parent context.Context, every time.Duration) func() context.Context {
	type holder struct{ ctx context.Context }
	var cur atomic.Pointer[holder]
	ctx, cancel := context.WithCancel(parent)
	cur.Store(&holder{ctx})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-parent.Done():
				cancel()
				return
			case <-t.C:
			}
			next, nextCancel := context.WithCancel(parent)
			cur.Store(&holder{next})
			cancel()
			cancel = nextCancel
		}
	}()
	return func() context.Context { return cur.Load().ctx }
}
