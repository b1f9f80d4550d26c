package plugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/internal/kvfile"
	"github.com/sparkhost/sparkhost/internal/metricset"
	"github.com/sparkhost/sparkhost/internal/pluginwire"
	"github.com/sparkhost/sparkhost/internal/timerq"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// runtime serves one module: it is the gRPC ModuleServer and the Host.
// Calls arrive one at a time from the server; mu also keeps a module's own
// goroutines out of the Host while no callback runs.
type runtime struct {
	pluginv1.UnimplementedModuleServer

	mod      Module
	manifest module.Manifest
	log      *slog.Logger

	mu      sync.Mutex
	inCall  atomic.Bool
	loaded  bool
	reg     *wire.Registry
	clients map[uint32]*module.ClientInfo
	server  module.ServerInfo
	now     time.Time
	timers  timerq.Queue
	kv      *kvfile.Store
	actions []*pluginv1.Action
	ents    entities
	metrics *metricset.Set
}

var _ module.Host = (*runtime)(nil)

func newRuntime(m Module, log *slog.Logger) (*runtime, error) {
	man := m.Manifest()
	reg := gamemsg.NewRegistry()
	for _, s := range man.Messages {
		if err := reg.Register(man.Name, s); err != nil {
			return nil, fmt.Errorf("manifest: %w", err)
		}
	}
	types, err := checkEntityTypes(man.EntityTypes)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if _, ok := m.(InputHandler); man.Inputs && !ok {
		return nil, errors.New("manifest: Inputs is set but the module has no OnInput method (plugin.InputHandler)")
	}
	// Every record names the module: the server files it under that name
	// even before it has the manifest.
	r := &runtime{mod: m, manifest: man, log: log.With("module", man.Name), reg: reg, clients: make(map[uint32]*module.ClientInfo)}
	r.ents.types = types
	if r.metrics, err = metricset.New(man.Metrics); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return r, nil
}

// call runs fn as a callback and returns the actions it took.
func (r *runtime) call(fn func()) []*pluginv1.Action {
	r.inCall.Store(true)
	r.actions = r.actions[:0]
	fn()
	r.finishUpdates()
	r.inCall.Store(false)
	out := r.actions
	r.actions = nil // handed to gRPC; a fresh slice next time
	return out
}

func (r *runtime) Init(_ context.Context, req *pluginv1.InitRequest) (*pluginv1.InitResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.loaded {
		return nil, errors.New("plugin: Init called twice")
	}
	r.setServer(req.GetServer())
	r.now = time.Now()
	r.initEntities(req)
	var err error
	acts := r.call(func() { err = r.mod.Load(r) })
	resp := &pluginv1.InitResponse{Manifest: manifestToPB(r.manifest), Actions: acts}
	if err != nil {
		resp.Error = err.Error()
		return resp, nil
	}
	r.loaded = true
	return resp, nil
}

func (r *runtime) Step(_ context.Context, req *pluginv1.StepRequest) (*pluginv1.StepResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.loaded {
		return nil, errors.New("plugin: Step before Init")
	}
	r.setServer(req.GetServer())
	r.now = time.Unix(0, req.GetNowUnixNs())
	for _, p := range req.GetPings() {
		if c := r.clients[p.GetClient()]; c != nil {
			c.Ping = time.Duration(p.GetPingNs())
		}
	}
	t := module.Tick{Number: req.GetTick(), DT: time.Duration(req.GetDtNs()), Now: r.now, Deadline: time.Unix(0, req.GetDeadlineUnixNs())}
	acts := r.call(func() {
		for _, ev := range req.GetEvents() {
			r.dispatch(ev)
		}
		r.timers.Run(r.now, nil)
		r.mod.OnTick(t)
	})
	r.recordHistory()
	return &pluginv1.StepResponse{Actions: acts, Metrics: r.metricUpdates()}, nil
}

func (r *runtime) dispatch(ev *pluginv1.Event) {
	switch ev.GetKind() {
	case pluginv1.EventKind_EVENT_ADMITTED:
		c := clientFromPB(ev.GetClient(), ev.GetInfo())
		r.clients[c.ID] = &c
		r.mod.OnAdmitted(c)
	case pluginv1.EventKind_EVENT_LEFT:
		c, ok := r.clients[ev.GetClient()]
		if !ok {
			c = &module.ClientInfo{ID: ev.GetClient()}
		}
		delete(r.clients, ev.GetClient())
		delete(r.ents.views, ev.GetClient())
		r.mod.OnLeft(*c, wire.DisconnectReason(ev.GetReason()))
	case pluginv1.EventKind_EVENT_MESSAGE:
		c, ok := r.clients[ev.GetClient()]
		if !ok {
			c = &module.ClientInfo{ID: ev.GetClient()}
		}
		r.mod.OnMessage(*c, wire.MessageType(ev.GetType()), ev.GetPayload())
	case pluginv1.EventKind_EVENT_MATCH_START:
		if ms, err := gamemsg.ParseMatchStart(ev.GetPayload()); err == nil {
			r.mod.OnMatchStart(ms)
		} else {
			r.log.Warn("bad MatchStart from the server", "err", err)
		}
	case pluginv1.EventKind_EVENT_MATCH_END:
		if me, err := gamemsg.ParseMatchEnd(ev.GetPayload()); err == nil {
			r.mod.OnMatchEnd(me)
		} else {
			r.log.Warn("bad MatchEnd from the server", "err", err)
		}
	case pluginv1.EventKind_EVENT_MAP_CHANGE:
		r.mod.OnMapChange(ev.GetMap(), int(ev.GetMapIndex()))
	case pluginv1.EventKind_EVENT_INPUT:
		ih, ok := r.mod.(InputHandler)
		in, err := gamemsg.ParseClientInput(ev.GetPayload())
		if !ok || err != nil {
			return
		}
		c, known := r.clients[ev.GetClient()]
		if !known {
			c = &module.ClientInfo{ID: ev.GetClient()}
		}
		ih.OnInput(*c, in)
	}
}

func (r *runtime) Command(_ context.Context, req *pluginv1.CommandRequest) (*pluginv1.CommandResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.loaded {
		return nil, errors.New("plugin: Command before Init")
	}
	var out string
	var err error
	acts := r.call(func() { out, err = r.mod.Command(req.GetName(), req.GetArgs()) })
	resp := &pluginv1.CommandResponse{Output: out, Actions: acts}
	if err != nil {
		resp.Error = err.Error()
	}
	return resp, nil
}

func (r *runtime) Shutdown(context.Context, *pluginv1.ShutdownRequest) (*pluginv1.ShutdownResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.loaded {
		return &pluginv1.ShutdownResponse{}, nil
	}
	r.loaded = false
	return &pluginv1.ShutdownResponse{Actions: r.call(r.mod.Unload)}, nil
}

func (r *runtime) setServer(p *pluginv1.ServerInfo) {
	if p == nil {
		return
	}
	r.server = module.ServerInfo{
		Name: p.GetName(), Map: p.GetMap(), Mode: gamemsg.GameMode(p.GetMode()), MatchState: gamemsg.MatchState(p.GetMatchState()),
		TickRate: int(p.GetTickRate()), Tick: p.GetTick(), Players: int(p.GetPlayers()), MaxPlayers: int(p.GetMaxPlayers()),
		DataDir: p.GetDataDir(), ReplicationRate: int(p.GetReplicationRate()), LagWindow: time.Duration(p.GetLagWindowNs()),
	}
	if r.server.DataDir == "" && p.GetModulesDir() != "" {
		r.server.DataDir = filepath.Join(p.GetModulesDir(), r.manifest.Name)
	}
}

// Host implementation. The runtime's lock is held during every callback,
// so these run under it.

func (r *runtime) act(a *pluginv1.Action) error {
	if !r.inCall.Load() {
		return ErrOutsideCallback
	}
	r.actions = append(r.actions, a)
	return nil
}

// checkSend validates an outgoing message as the server will.
func (r *runtime) checkSend(t wire.MessageType, payload []byte) error {
	s, owner, ok := r.reg.Lookup(t)
	if !ok {
		return fmt.Errorf("send type %d: %w (declare it in the manifest)", t, wire.ErrUnknownType)
	}
	if owner != r.manifest.Name && owner != wire.BuiltinOwner {
		return fmt.Errorf("send type %d: not a type of this module", t)
	}
	hdr := wire.Header{Type: t, Channel: s.Channel}
	if err := r.reg.Validate(wire.ServerToClient, &hdr, payload); err != nil {
		return fmt.Errorf("send type %d: %w", t, err)
	}
	return nil
}

func (r *runtime) Send(client uint32, t wire.MessageType, payload []byte) error {
	if err := r.checkSend(t, payload); err != nil {
		return err
	}
	return r.act(&pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_SEND, Client: client, Type: uint32(t), Payload: slices.Clone(payload)})
}

func (r *runtime) Broadcast(t wire.MessageType, payload []byte) error {
	return r.BroadcastExcept(0, t, payload)
}

func (r *runtime) BroadcastExcept(except uint32, t wire.MessageType, payload []byte) error {
	if err := r.checkSend(t, payload); err != nil {
		return err
	}
	return r.act(&pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_BROADCAST, Client: except, Type: uint32(t), Payload: slices.Clone(payload)})
}

func (r *runtime) Kick(client uint32, detail string) error {
	if len(detail) > wire.MaxDetailLen {
		return fmt.Errorf("kick detail is %d bytes, more than %d", len(detail), wire.MaxDetailLen)
	}
	return r.act(&pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_KICK, Client: client, Text: detail})
}

func (r *runtime) AddScore(client uint32, score, kills, deaths int32) {
	r.act(&pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_SCORE, Client: client, Score: score, Kills: kills, Deaths: deaths})
}

func (r *runtime) Fault(err error) {
	if err == nil {
		return
	}
	r.act(&pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_FAULT, Text: err.Error()})
}

func (r *runtime) Log() *slog.Logger { return r.log }

func (r *runtime) Client(id uint32) (module.ClientInfo, bool) {
	c, ok := r.clients[id]
	if !ok {
		return module.ClientInfo{}, false
	}
	return *c, true
}

func (r *runtime) Clients() []module.ClientInfo {
	out := make([]module.ClientInfo, 0, len(r.clients))
	for _, c := range r.clients {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b module.ClientInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (r *runtime) Server() module.ServerInfo { return r.server }
func (r *runtime) Now() time.Time            { return r.now }

func (r *runtime) After(d time.Duration, fn func()) module.TimerID {
	return r.timers.Add(r.now, d, 0, fn)
}

func (r *runtime) Every(period time.Duration, fn func()) module.TimerID {
	if period <= 0 {
		period = time.Nanosecond // every tick
	}
	return r.timers.Add(r.now, period, period, fn)
}

func (r *runtime) Cancel(id module.TimerID) bool { return r.timers.Cancel(id) }

func (r *runtime) KV() (module.KV, error) {
	if r.kv == nil {
		if r.server.DataDir == "" {
			return nil, errors.New("plugin: the server gave the module no data directory")
		}
		kv, err := kvfile.Open(filepath.Join(r.server.DataDir, "kv.json"))
		if err != nil {
			return nil, err
		}
		r.kv = kv
	}
	return r.kv, nil
}

func clientFromPB(id uint32, p *pluginv1.ClientInfo) module.ClientInfo {
	c := module.ClientInfo{ID: id, Name: p.GetName(), Ping: time.Duration(p.GetPingNs())}
	if ap, err := netip.ParseAddrPort(p.GetAddr()); err == nil {
		c.Addr = ap
	}
	copy(c.ChannelBinding[:], p.GetChannelBinding())
	if t := p.GetTicket(); len(t) > 0 {
		c.Ticket = append([]byte(nil), t...)
	}
	return c
}

func manifestToPB(m module.Manifest) *pluginv1.Manifest {
	pm := &pluginv1.Manifest{Name: m.Name, Version: m.Version}
	for _, s := range m.Messages {
		pm.Messages = append(pm.Messages, pluginwire.SchemaToPB(s))
	}
	for _, c := range m.Commands {
		pm.Commands = append(pm.Commands, &pluginv1.CommandSpec{Name: c.Name, Usage: c.Usage, Help: c.Help})
	}
	pm.EntityTypes, pm.Inputs = encodeManifestTypes(m.EntityTypes), m.Inputs
	pm.Metrics = metricsToPB(m.Metrics)
	return pm
}
