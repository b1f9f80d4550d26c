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
	"strconv"
	"strings"
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

// shared is the plugin process: the gRPC ModuleServer, and what the rooms
// it serves share (the manifest, the message registry, the batch of
// actions, the metrics, the key-value store). Calls arrive one at a time
// from the server; mu also keeps a module's own goroutines out of the Host
// while no callback runs.
type shared struct {
	pluginv1.UnimplementedModuleServer

	manifest module.Manifest
	log      *slog.Logger
	types    map[uint16]*sdkType
	// single is Serve's module, in the module's one room; newRoom and
	// rooms are ServeRooms': a module for each room the server opens.
	single  *runtime
	newRoom func() Module
	rooms   map[uint32]*runtime

	mu      sync.Mutex
	inCall  atomic.Bool
	loaded  bool
	reg     *wire.Registry
	now     time.Time
	kv      *kvfile.Store
	actions []*pluginv1.Action
	metrics *metricset.Set
}

// runtime serves one room's module: it is the module's Host. Serve's
// runtime is room 0 (the server gives such a plugin a process per room).
type runtime struct {
	*shared
	room    uint32
	mod     Module
	log     *slog.Logger
	loaded  bool
	clients map[uint32]*module.ClientInfo
	server  module.ServerInfo
	timers  timerq.Queue
	ents    entities
	// shares is the room's share of each metric (metrics.go).
	shares []float64
}

var _ module.Host = (*runtime)(nil)

// newShared checks a manifest and builds the process's shared state;
// sample is a module of it (for the capability checks).
func newShared(man module.Manifest, sample Module, log *slog.Logger) (*shared, error) {
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
	if _, ok := sample.(InputHandler); man.Inputs && !ok {
		return nil, errors.New("manifest: Inputs is set but the module has no OnInput method (plugin.InputHandler)")
	}
	// Every record names the module: the server files it under that name
	// even before it has the manifest.
	sh := &shared{manifest: man, log: log.With("module", man.Name), reg: reg, types: types, rooms: make(map[uint32]*runtime)}
	if sh.metrics, err = metricset.New(man.Metrics); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return sh, nil
}

// newRuntime is Serve's process: m in the module's one room.
func newRuntime(m Module, log *slog.Logger) (*runtime, error) {
	sh, err := newShared(m.Manifest(), m, log)
	if err != nil {
		return nil, err
	}
	sh.single = sh.newRoomRuntime(0, m)
	return sh.single, nil
}

// newRoomsServer is ServeRooms' process: a module from newRoom for every
// room the server opens.
func newRoomsServer(newRoom func() Module, log *slog.Logger) (*shared, error) {
	sample := newRoom()
	man := sample.Manifest()
	man.Rooms = true
	sh, err := newShared(man, sample, log)
	if err != nil {
		return nil, err
	}
	sh.newRoom = newRoom
	return sh, nil
}

func (sh *shared) newRoomRuntime(room uint32, m Module) *runtime {
	r := &runtime{shared: sh, room: room, mod: m, log: sh.log, clients: make(map[uint32]*module.ClientInfo)}
	if sh.newRoom != nil {
		r.log = sh.log.With("room", room)
	}
	r.ents.types = sh.types
	return r
}

// each runs fn for every room's runtime, in room order.
func (sh *shared) each(fn func(r *runtime)) {
	if sh.single != nil {
		fn(sh.single)
		return
	}
	ids := make([]uint32, 0, len(sh.rooms))
	for id := range sh.rooms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fn(sh.rooms[id])
	}
}

// call runs fn as a callback and returns the actions it took.
func (sh *shared) call(fn func()) []*pluginv1.Action {
	sh.inCall.Store(true)
	sh.actions = sh.actions[:0]
	fn()
	sh.each((*runtime).finishUpdates)
	sh.inCall.Store(false)
	out := sh.actions
	sh.actions = nil // handed to gRPC; a fresh slice next time
	return out
}

func (sh *shared) Init(_ context.Context, req *pluginv1.InitRequest) (*pluginv1.InitResponse, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.loaded {
		return nil, errors.New("plugin: Init called twice")
	}
	sh.now = time.Now()
	var err error
	var acts []*pluginv1.Action
	if r := sh.single; r != nil {
		r.setServer(req.GetServer())
		r.initEntities(module.IDRange{First: req.GetEntityIdFirst(), Last: req.GetEntityIdLast()})
		acts = sh.call(func() { err = r.mod.Load(r) })
		r.loaded = err == nil
	} else {
		acts, err = sh.openFirstRoom(req)
	}
	resp := &pluginv1.InitResponse{Manifest: manifestToPB(sh.manifest), Actions: acts}
	if err != nil {
		resp.Error = err.Error()
		return resp, nil
	}
	sh.loaded = true
	return resp, nil
}

func (sh *shared) Step(_ context.Context, req *pluginv1.StepRequest) (*pluginv1.StepResponse, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.loaded {
		return nil, errors.New("plugin: Step before Init")
	}
	sh.now = time.Unix(0, req.GetNowUnixNs())
	if sh.single != nil {
		sh.single.setServer(req.GetServer())
	}
	for _, rt := range req.GetRooms() {
		if r := sh.rooms[rt.GetRoom()]; r != nil {
			r.setServer(rt.GetServer())
		}
	}
	for _, p := range req.GetPings() {
		sh.each(func(r *runtime) {
			if c := r.clients[p.GetClient()]; c != nil {
				c.Ping = time.Duration(p.GetPingNs())
				c.Link = module.Link{RTTVariance: time.Duration(p.GetRttVarNs()), Loss: p.GetLoss(),
					Bandwidth: p.GetBandwidth(), SendRate: p.GetSendRate(),
					QueueDelay: time.Duration(p.GetQueueDelayNs()), Backlogged: p.GetBacklogged()}
			}
		})
	}
	t := module.Tick{Number: req.GetTick(), DT: time.Duration(req.GetDtNs()), Now: sh.now, Deadline: time.Unix(0, req.GetDeadlineUnixNs())}
	acts := sh.call(func() {
		for _, ev := range req.GetEvents() {
			sh.dispatch(req, ev)
		}
		sh.each(func(r *runtime) {
			r.timers.Run(sh.now, nil)
			r.mod.OnTick(t)
		})
	})
	sh.each((*runtime).recordHistory)
	return &pluginv1.StepResponse{Actions: acts, Metrics: sh.metricUpdates()}, nil
}

// dispatch hands an event to its room's module; ServeRooms' rooms open
// and close here.
func (sh *shared) dispatch(req *pluginv1.StepRequest, ev *pluginv1.Event) {
	if sh.single != nil {
		sh.single.dispatch(ev)
		return
	}
	id := ev.GetRoom()
	switch ev.GetKind() {
	case pluginv1.EventKind_EVENT_ROOM_OPEN:
		sh.openRoom(req, ev)
		return
	case pluginv1.EventKind_EVENT_ROOM_CLOSE:
		if r := sh.rooms[id]; r != nil {
			delete(sh.rooms, id)
			r.mod.Unload()
			r.dropGauges()
		}
		return
	}
	if r := sh.rooms[id]; r != nil {
		r.dispatch(ev)
	}
}

// openFirstRoom starts, within Init, the module of the room the plugin is
// started for (the InitRequest's server facts name it; none: the whole
// server, room 0), so that a module whose Load fails — a bad config file,
// a database it cannot open — fails the start, which the server reports
// and counts, instead of a room that silently has no module. The
// EventRoomOpen the server sends for that room later finds it open.
func (sh *shared) openFirstRoom(req *pluginv1.InitRequest) ([]*pluginv1.Action, error) {
	id := req.GetServer().GetRoom().GetId()
	r := sh.newRoomRuntime(id, sh.newRoom())
	r.setServer(req.GetServer())
	r.initEntities(module.IDRange{First: req.GetEntityIdFirst(), Last: req.GetEntityIdLast()})
	sh.rooms[id] = r // listed during Load, so its updates are finished with the call's
	var err error
	acts := sh.call(func() { err = r.mod.Load(r) })
	if err != nil {
		delete(sh.rooms, id)
		return acts, err
	}
	r.loaded = true
	return acts, nil
}

// openRoom starts a module for a room the server opened: its facts are
// among the request's rooms, its entity ids in the event. A module whose
// Load fails reports a fault for the room and gets none of its events.
func (sh *shared) openRoom(req *pluginv1.StepRequest, ev *pluginv1.Event) {
	id := ev.GetRoom() // 0: the whole server, for a module loaded for it
	if sh.rooms[id] != nil {
		return
	}
	r := sh.newRoomRuntime(id, sh.newRoom())
	for _, rt := range req.GetRooms() {
		if rt.GetRoom() == id {
			r.setServer(rt.GetServer())
		}
	}
	r.initEntities(module.IDRange{First: ev.GetEntityIdFirst(), Last: ev.GetEntityIdLast()})
	if err := r.mod.Load(r); err != nil {
		r.dropGauges()
		r.Fault(fmt.Errorf("room %d: the module did not start: %w", id, err))
		return
	}
	r.loaded = true
	sh.rooms[id] = r
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
	case pluginv1.EventKind_EVENT_PAUSE:
		if ph, ok := r.mod.(PauseHandler); ok {
			ph.OnPause(ev.GetPaused())
		}
	case pluginv1.EventKind_EVENT_RESUMED:
		c := clientFromPB(ev.GetClient(), ev.GetInfo())
		if known, ok := r.clients[c.ID]; ok {
			known.Addr = c.Addr // the same client on a new connection
			c = *known
		} else {
			r.clients[c.ID] = &c
		}
		if rh, ok := r.mod.(ResumeHandler); ok {
			rh.OnResumed(c)
		}
	case pluginv1.EventKind_EVENT_DRAIN:
		if dh, ok := r.mod.(DrainHandler); ok {
			dh.OnDrain(ev.GetDraining(), fromUnixNano(ev.GetDrainDeadlineUnixNs()))
		}
	}
}

// fromUnixNano is the time ns nanoseconds after 1970; 0 is the zero time.
func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Command runs a console command: in Serve's module, or in the module of
// the room a first argument "@N" names (the only room's without one).
func (sh *shared) Command(_ context.Context, req *pluginv1.CommandRequest) (*pluginv1.CommandResponse, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.loaded {
		return nil, errors.New("plugin: Command before Init")
	}
	r, args, err := sh.commandRoom(req.GetArgs())
	if err != nil {
		return &pluginv1.CommandResponse{Error: err.Error()}, nil
	}
	var out string
	acts := sh.call(func() { out, err = r.mod.Command(req.GetName(), args) })
	resp := &pluginv1.CommandResponse{Output: out, Actions: acts}
	if err != nil {
		resp.Error = err.Error()
	}
	return resp, nil
}

// commandRoom picks the room a command runs in.
func (sh *shared) commandRoom(args []string) (*runtime, []string, error) {
	if sh.single != nil {
		return sh.single, args, nil
	}
	if len(args) > 0 && strings.HasPrefix(args[0], "@") {
		id, err := strconv.ParseUint(args[0][1:], 10, 32)
		if r := sh.rooms[uint32(id)]; err == nil && r != nil {
			return r, args[1:], nil
		}
		return nil, nil, fmt.Errorf("module %s does not run in room %s", sh.manifest.Name, args[0][1:])
	}
	var open []string
	var only *runtime
	sh.each(func(r *runtime) {
		open = append(open, strconv.FormatUint(uint64(r.room), 10))
		only = r
	})
	if len(open) == 1 {
		return only, args, nil
	}
	if len(open) == 0 {
		return nil, nil, fmt.Errorf("module %s runs in no room now", sh.manifest.Name)
	}
	return nil, nil, fmt.Errorf("module %s runs in rooms %s; name one first: @ROOM", sh.manifest.Name, strings.Join(open, ", "))
}

func (sh *shared) Shutdown(context.Context, *pluginv1.ShutdownRequest) (*pluginv1.ShutdownResponse, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.loaded {
		return &pluginv1.ShutdownResponse{}, nil
	}
	sh.loaded = false
	defer stopProfile() // the server kills the process next
	return &pluginv1.ShutdownResponse{Actions: sh.call(func() { sh.each(func(r *runtime) { r.mod.Unload() }) })}, nil
}

func (r *runtime) setServer(p *pluginv1.ServerInfo) {
	if p == nil {
		return
	}
	r.server = module.ServerInfo{
		Name: p.GetName(), Map: p.GetMap(), Mode: gamemsg.GameMode(p.GetMode()), MatchState: gamemsg.MatchState(p.GetMatchState()),
		TickRate: int(p.GetTickRate()), Tick: p.GetTick(), Players: int(p.GetPlayers()), MaxPlayers: int(p.GetMaxPlayers()),
		DataDir: p.GetDataDir(), ReplicationRate: int(p.GetReplicationRate()), LagWindow: time.Duration(p.GetLagWindowNs()),
		Draining: p.GetDraining(), DrainDeadline: fromUnixNano(p.GetDrainDeadlineUnixNs()),
	}
	if r.server.DataDir == "" && p.GetModulesDir() != "" {
		r.server.DataDir = filepath.Join(p.GetModulesDir(), r.manifest.Name)
	}
	if room := p.GetRoom(); room != nil {
		r.server.Room = module.RoomInfo{ID: module.RoomID(room.GetId()), Name: room.GetName(), Mode: room.GetMode(),
			Owner: room.GetOwner(), Capacity: int(room.GetCapacity()), State: gamemsg.RoomStatus(room.GetState())}
	}
}

// Host implementation. The runtime's lock is held during every callback,
// so these run under it.

func (r *runtime) act(a *pluginv1.Action) error {
	if !r.inCall.Load() {
		return ErrOutsideCallback
	}
	a.Room = r.room
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

func (r *runtime) SetArea(name string) error {
	if name != "" && !wire.ValidName([]byte(name), module.MaxAreaLen) {
		return fmt.Errorf("area %q: %w", name, module.ErrBadArea)
	}
	return r.act(&pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_SET_AREA, Text: name})
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
	c := module.ClientInfo{ID: id, Name: p.GetName(), Ping: time.Duration(p.GetPingNs()), Present: p.GetPresent()}
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
	pm.Rooms = m.Rooms
	pm.NoMatch = m.NoMatch
	pm.AnswersNextTick = m.AnswersNextTick
	pm.Protocol, pm.OldestProtocol = uint32(m.Protocol), uint32(m.OldestProtocol)
	return pm
}
