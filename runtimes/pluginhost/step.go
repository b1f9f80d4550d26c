package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"google.golang.org/grpc"
)

// The tick policy: a slow plugin must not slow the server.
//
//   - Each tick the adapter sends one Step call and waits for the answer at
//     most until the tick's Deadline (the module budget,
//     modules.tick_budget_fraction of the tick; at least minWait). An answer
//     in time is applied in the same tick.
//   - A later answer is not waited for: the call stays in flight and its
//     actions are applied at the first tick after it arrived (a "late
//     answer"). A plugin that needs, say, 10 ms of a 16.7 ms tick thus runs
//     every tick, one tick behind.
//   - A tick that finds the previous call still out holds its events (a
//     "held tick"); they go, in order, with the next call, once the answer
//     is in. The adapter is a module.Backlogger: the manager takes no more
//     from the inbox than it can hold, so a plugin that falls behind fills
//     its bounded inbox (the network side drops and counts) — but admissions
//     and departures are never dropped.
//   - Lateness is judged over windows of LateWindow tick time (10 s): a
//     window in which more than half the ticks were held is one fault,
//     "module X answered late for 10s (about 200ms per tick against a
//     16.7ms tick): it runs behind the server". That is at most 6 faults a
//     minute, fewer than the manager's default limit of 10: lateness alone
//     is reported, it does not fail a module. One slow tick is no fault.
//   - A call unanswered for HangTimeout (10 s) is a hang: the plugin is
//     killed with its process group and restarted like a crash.
//   - With AnswerNextTick ([modules] plugin_answers = "next_tick") the
//     tick never waits for the plugin: the plugin works while the server
//     sleeps between ticks, and its answer is taken at the start of the
//     next Step if it is in by then, and applied before that tick's call
//     goes out. Actions take one tick longer; the tick does not contain
//     the plugin's time. An answer not in at the start of the next tick
//     makes that tick a held tick, as above (the game thread does not
//     stop to wait for it), and is applied at the first tick after it
//     arrived. Not counted as late answers.

// Names of the runtime/trace regions of a Step, so that an execution trace
// shows how long the game thread waited for the plugin and applied its
// answer.
const (
	RegionWait  = "plugin wait"
	RegionApply = "plugin apply"
)

// minWait is the least the game thread waits for an answer, even when the
// tick's deadline is (nearly) past: a late tick is the server's lateness,
// not the plugin's.
const minWait = time.Millisecond

// stepper is the Step call in flight and what waits for the next one. The
// game thread owns everything but the channels' other ends, which belong to
// the worker goroutine that makes the calls (one goroutine for the life of
// the process: sending a tick allocates no goroutine).
type stepper struct {
	calls   chan *pluginv1.StepRequest // to the worker; closed by stop
	answers chan stepAnswer            // from the worker; one at most
	wait    *time.Timer                // reused for every tick's wait

	req      pluginv1.StepRequest
	evs      []pluginv1.Event
	evp      []*pluginv1.Event
	inFlight bool
	sentAt   time.Time      // wall clock, for the hang timeout
	held     []module.Event // events of ticks that found the call still out
	window   lateWindow

	lateAnswers atomic.Uint64
	heldTicks   atomic.Uint64
	answerTime  atomic.Int64 // moving average of the round trip, ns
	tickWaits   atomic.Uint64
	tickWaited  atomic.Int64 // ns the game thread blocked in answered, in all
}

type stepAnswer struct {
	resp *pluginv1.StepResponse
	err  error
	took time.Duration
}

// lateWindow counts the ticks of one lateness window (tick clock).
type lateWindow struct {
	since       time.Time
	ticks, held int
}

func (s *stepper) start(ctx context.Context, rpc pluginv1.ModuleClient) {
	s.calls = make(chan *pluginv1.StepRequest, 1)
	s.answers = make(chan stepAnswer, 1)
	s.wait = time.NewTimer(time.Hour)
	s.wait.Stop()
	go stepWorker(ctx, rpc, s.calls, s.answers, grpc.ForceCodecV2(newStepCodec()))
}

// stepWorker makes the Step calls it is handed, one at a time, until calls
// is closed. A call ends with its answer or when ctx ends (the plugin was
// killed); there is no per-call deadline: hangs are judged by the game
// thread against HangTimeout.
//
// codec decodes the answers into storage it reuses (stepCodec): an answer
// is valid until the next call's, which the game thread sends only after
// applying it.
func stepWorker(ctx context.Context, rpc pluginv1.ModuleClient, calls <-chan *pluginv1.StepRequest, answers chan<- stepAnswer, codec grpc.CallOption) {
	for req := range calls {
		start := time.Now()
		resp, err := rpc.Step(ctx, req, codec)
		answers <- stepAnswer{resp: resp, err: err, took: time.Since(start)}
	}
}

// stop ends the worker once its call in flight (if any) returns.
func (s *stepper) stop() {
	if s.calls != nil {
		close(s.calls)
		s.calls = nil
	}
	if s.wait != nil {
		s.wait.Stop()
	}
}

// answered takes the answer of the call in flight if it comes within d,
// or, for d ≤ 0, if it is in already. It waits on the stepper's one timer:
// nothing is allocated per tick.
func (s *stepper) answered(d time.Duration) (stepAnswer, bool) {
	if !s.inFlight {
		return stepAnswer{}, false
	}
	if d <= 0 {
		select {
		case a := <-s.answers:
			s.inFlight = false
			return a, true
		default:
			return stepAnswer{}, false
		}
	}
	defer trace.StartRegion(context.Background(), RegionWait).End() // an execution trace's view of the wait
	s.wait.Reset(d)
	select {
	case a := <-s.answers:
		s.wait.Stop()
		s.inFlight = false
		return a, true
	case <-s.wait.C:
		return stepAnswer{}, false
	}
}

// countWait adds a tick's wait for its answer, begun at began, to the
// figures (the unload's last wait is no tick's).
func (s *stepper) countWait(began time.Time) {
	s.tickWaits.Add(1)
	s.tickWaited.Add(int64(time.Since(began)))
}

// Step runs one tick: it takes the previous call's answer if it is in
// (without waiting for it), then sends
// this tick's events (with any held ones) and waits for the answer up to the
// tick's deadline (with AnswerNextTick: not at all) — or, if the previous
// call is still out, holds them.
func (m *Module) Step(t module.Tick, events []module.Event) error {
	if err := m.check(); err != nil {
		return err
	}
	if m.steps.calls == nil {
		return errors.New("plugin: Step before Load")
	}
	if len(m.cmds) > 0 {
		m.collectCommands()
		if m.dead != nil {
			return m.dead
		}
	}
	s := &m.steps
	if s.inFlight {
		// The previous call's answer (a late one, or next_tick's) is taken
		// only if it is in: the game thread never stops here. A wait of
		// even 1 ms gives the core away, and on a core shared with the
		// plugin and other processes the kernel may take many milliseconds
		// to give it back (docs/performance.md § 4).
		a, ok := s.answered(0)
		if !ok {
			return m.behind(t, events)
		}
		if err := m.finish(a); err != nil {
			return err
		}
	}
	m.account(t, false)
	m.send(t, events)
	if m.answerNextTick() {
		return nil // applied at the start of the next Step
	}
	began := time.Now()
	a, ok := s.answered(waitFor(t))
	s.countWait(began)
	if !ok {
		s.lateAnswers.Add(1)
		return nil
	}
	return m.finish(a)
}

// waitFor is how long this tick waits for its answer.
func waitFor(t module.Tick) time.Duration {
	if t.Deadline.IsZero() {
		return max(t.DT/4, minWait)
	}
	return max(time.Until(t.Deadline), minWait)
}

// send hands this tick's call to the worker.
func (m *Module) send(t module.Tick, events []module.Event) {
	s := &m.steps
	batch := events
	if len(s.held) > 0 {
		s.held = append(s.held, events...)
		batch = s.held
	}
	req := &s.req
	req.Tick, req.DtNs, req.NowUnixNs = t.Number, int64(t.DT), t.Now.UnixNano()
	req.DeadlineUnixNs = time.Now().Add(waitFor(t)).UnixNano()
	if req.Server == nil {
		req.Server = &pluginv1.ServerInfo{}
	}
	fillServer(req.Server, m.host.Server())
	req.Events = m.events(batch)
	req.Rooms = m.roomTicks(req.Rooms[:0])
	clear(s.held) // the request holds the payloads now
	s.held = s.held[:0]
	req.Pings = m.appendPings(req.Pings[:0], t)
	s.sentAt = time.Now()
	s.inFlight = true
	s.calls <- req // the worker is idle: it answered the last call
}

// finish applies an answer (or reports the crash it carries).
func (m *Module) finish(a stepAnswer) error {
	s := &m.steps
	s.inFlight = false
	clear(s.evs) // drop payload references
	if a.err != nil {
		return m.crashed(a.err)
	}
	old := s.answerTime.Load()
	if old == 0 {
		s.answerTime.Store(int64(a.took))
	} else {
		s.answerTime.Store(old + (int64(a.took)-old)/8)
	}
	region := trace.StartRegion(context.Background(), RegionApply)
	m.apply(a.resp.GetActions())
	region.End()
	m.applyMetrics(a.resp.GetMetrics())
	return nil
}

// behind holds a tick's events while the previous call is out, and kills a
// plugin that has left it unanswered for HangTimeout.
func (m *Module) behind(t module.Tick, events []module.Event) error {
	s := &m.steps
	s.held = append(s.held, events...)
	s.heldTicks.Add(1)
	if time.Since(s.sentAt) >= m.cfg.HangTimeout {
		m.kill()
		m.dead = fmt.Errorf("%s: %w", m.hungText(), module.ErrCrashed)
		return m.dead
	}
	m.account(t, true)
	return nil
}

func (m *Module) hungText() string {
	return fmt.Sprintf("did not answer for %v and was killed as hung", m.cfg.HangTimeout)
}

// account counts a tick in the lateness window and reports a fault for a
// window in which the plugin ran behind on most ticks.
func (m *Module) account(t module.Tick, held bool) {
	w := &m.steps.window
	if w.since.IsZero() {
		w.since = t.Now
	}
	w.ticks++
	if held {
		w.held++
	}
	span := t.Now.Sub(w.since)
	if span < m.cfg.LateWindow {
		return
	}
	if 2*w.held > w.ticks {
		per := time.Duration(m.steps.answerTime.Load())
		if out := time.Since(m.steps.sentAt); m.steps.inFlight && out > per {
			per = out // the call out now is the slowest yet
		}
		m.host.Fault(fmt.Errorf("module %s answered late for %v (about %v per tick against a %v tick): it runs behind the server; its events wait for its answers and its actions apply late",
			m.name, span.Round(time.Second), per.Round(time.Millisecond), t.DT.Round(100*time.Microsecond)))
	}
	*w = lateWindow{since: t.Now}
}

// Backlog is how many events the adapter holds for the next call
// (module.Backlogger).
func (m *Module) Backlog() int { return len(m.steps.held) }

// RuntimeStats are the adapter's figures (module.Reporter).
func (m *Module) RuntimeStats() module.RuntimeStats {
	return module.RuntimeStats{
		LateAnswers: m.steps.lateAnswers.Load(), HeldTicks: m.steps.heldTicks.Load(),
		AnswerTime: time.Duration(m.steps.answerTime.Load()),
		TickWaits:  m.steps.tickWaits.Load(), TickWaitTime: time.Duration(m.steps.tickWaited.Load()),
		Resident: m.memory.resident(), MemoryLimit: m.cfg.MemoryLimit,
		LogDropped: m.logs.dropped(),
	}
}

// events converts the batch, reusing the request's event storage.
func (m *Module) events(events []module.Event) []*pluginv1.Event {
	s := &m.steps
	if cap(s.evs) < len(events) {
		s.evs = make([]pluginv1.Event, len(events), 2*len(events))
		s.evp = make([]*pluginv1.Event, len(events), 2*len(events))
	}
	s.evs, s.evp = s.evs[:len(events)], s.evp[:len(events)]
	for i := range events {
		ev, pe := &events[i], &s.evs[i]
		s.evp[i] = pe
		pe.Client, pe.Room = ev.Client, uint32(ev.Room)
		switch ev.Kind {
		case module.EventAdmitted:
			pe.Kind = pluginv1.EventKind_EVENT_ADMITTED
			ci, _ := m.host.Client(ev.Client)
			ci.ID, ci.Name, ci.Present = ev.Client, ev.Name, ev.Present
			pe.Info = clientToPB(ci)
		case module.EventLeft:
			pe.Kind, pe.Reason, pe.Leave = pluginv1.EventKind_EVENT_LEFT, uint32(ev.Reason), uint32(ev.Leave)
		case module.EventMessage:
			pe.Kind, pe.Type, pe.Payload = pluginv1.EventKind_EVENT_MESSAGE, uint32(ev.Type), ev.Payload
		case module.EventMatchStart:
			pe.Kind, pe.Payload = pluginv1.EventKind_EVENT_MATCH_START, gamemsg.AppendMatchStart(nil, &ev.Match)
		case module.EventMatchEnd:
			pe.Kind, pe.Payload = pluginv1.EventKind_EVENT_MATCH_END, gamemsg.AppendMatchEnd(nil, &ev.MatchEnd)
		case module.EventMapChange:
			pe.Kind, pe.Map, pe.MapIndex = pluginv1.EventKind_EVENT_MAP_CHANGE, ev.Map, int32(ev.MapIndex)
		case module.EventInput:
			pe.Kind, pe.Payload = pluginv1.EventKind_EVENT_INPUT, gamemsg.AppendClientInput(nil, &ev.Input)
		case module.EventRoomOpen:
			pe.Kind, pe.RoomInfo = pluginv1.EventKind_EVENT_ROOM_OPEN, &pluginv1.RoomInfo{}
			roomToPB(pe.RoomInfo, ev.RoomInfo)
			pe.RoomInfo.Id = uint32(ev.Room)
			pe.EntityIdFirst, pe.EntityIdLast = ev.EntityIDs.First, ev.EntityIDs.Last
			m.openRoom(ev.Room)
		case module.EventRoomClose:
			pe.Kind = pluginv1.EventKind_EVENT_ROOM_CLOSE
			m.closeRoom(ev.Room)
		case module.EventPause:
			pe.Kind, pe.Paused = pluginv1.EventKind_EVENT_PAUSE, ev.Paused
		case module.EventResumed:
			pe.Kind = pluginv1.EventKind_EVENT_RESUMED
			ci, _ := m.host.Client(ev.Client)
			ci.ID, ci.Name = ev.Client, ev.Name
			pe.Info = clientToPB(ci)
		case module.EventDrain:
			pe.Kind, pe.Draining, pe.DrainDeadlineUnixNs = pluginv1.EventKind_EVENT_DRAIN, ev.Draining, unixNano(ev.DrainDeadline)
		default:
			pe.Kind = pluginv1.EventKind_EVENT_UNSPECIFIED
		}
	}
	return s.evp
}
