package supervisor

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/internal/kvfile"
	"github.com/sparkhost/sparkhost/internal/metricset"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// moduleHost is a Host handed to one module instance: its own (att nil;
// the Host of Load), which acts in the instance's one room, or the Host of
// one room of an instance that serves many (att set; RoomHost.Room).
type moduleHost struct {
	inst *instance
	att  *attachment
}

var (
	_ module.Host     = (*moduleHost)(nil)
	_ module.RoomHost = (*moduleHost)(nil)
	_ module.Starter  = (*moduleHost)(nil)
)

// room returns the room a call acts in.
func (h *moduleHost) room() (*attachment, error) {
	if h.att != nil {
		if !slices.Contains(h.inst.rooms, h.att) {
			return nil, module.ErrNoRoom
		}
		return h.att, nil
	}
	switch {
	case h.inst.multi:
		return nil, module.ErrManyRooms
	case len(h.inst.rooms) == 0:
		return nil, module.ErrNoRoom
	}
	return h.inst.rooms[0], nil
}

// Room is the Host of one of the instance's rooms (module.RoomHost).
func (h *moduleHost) Room(id module.RoomID) (module.Host, error) {
	for _, a := range h.inst.rooms {
		if a.sc.ID == id {
			if !h.inst.multi {
				return h.inst.own, nil
			}
			return a.host, nil
		}
	}
	return nil, fmt.Errorf("room %d: %w", id, module.ErrNoRoom)
}

// member returns the room of a call about client, which must be in it.
func (h *moduleHost) member(client uint32) (*attachment, error) {
	a, err := h.room()
	if err != nil {
		return nil, err
	}
	if !a.sc.has(client) {
		return nil, fmt.Errorf("client %d is not in room %d: %w", client, a.sc.ID, module.ErrNoClient)
	}
	return a, nil
}

// channelFor checks that the module may send t with payload and returns the
// schema's channel. The payload is validated as a client would: a module can
// never put a malformed message on the wire.
func (h *moduleHost) channelFor(t wire.MessageType, payload []byte) (wire.Channel, error) {
	reg := h.inst.m.reg
	s, owner, ok := reg.Lookup(t)
	if !ok {
		return 0, fmt.Errorf("send type %d: %w", t, wire.ErrUnknownType)
	}
	if owner != h.inst.manifest.Name && owner != wire.BuiltinOwner {
		return 0, fmt.Errorf("send type %d (owned by %s): %w", t, owner, module.ErrNotYourType)
	}
	if wire.IsTransportType(t) {
		return 0, fmt.Errorf("send %s: %w (the transport's own type)", t, module.ErrNotYourType)
	}
	switch t {
	case gamemsg.TypeEntitySpawn, gamemsg.TypeEntityStateUpdate, gamemsg.TypeEntityDestroy, gamemsg.TypeGameStateSync:
		return 0, fmt.Errorf("send %s: %w", t, module.ErrReplicated)
	}
	if t >= gamemsg.TypeRoomListRequest && t <= gamemsg.TypeRoomUpdate {
		return 0, fmt.Errorf("send %s: %w (the host sends the room messages)", t, module.ErrNotYourType)
	}
	hdr := wire.Header{Type: t, Channel: s.Channel}
	if err := reg.Validate(wire.ServerToClient, &hdr, payload); err != nil {
		return 0, fmt.Errorf("send type %d: %w", t, err)
	}
	return s.Channel, nil
}

func (h *moduleHost) Send(client uint32, t wire.MessageType, payload []byte) error {
	ch, err := h.channelFor(t, payload)
	if err != nil {
		return err
	}
	if _, err := h.member(client); err != nil {
		return err
	}
	return transportErr(h.inst.m.cfg.Transport.Send(client, t, ch, payload))
}

func (h *moduleHost) Broadcast(t wire.MessageType, payload []byte) error {
	return h.BroadcastExcept(0, t, payload)
}

// BroadcastExcept sends to the room's members; a room that holds everyone
// uses the transport's broadcast.
func (h *moduleHost) BroadcastExcept(except uint32, t wire.MessageType, payload []byte) error {
	ch, err := h.channelFor(t, payload)
	if err != nil {
		return err
	}
	a, err := h.room()
	if err != nil {
		return err
	}
	tr := h.inst.m.cfg.Transport
	if a.sc.Everyone {
		return transportErr(tr.BroadcastExcept(except, t, ch, payload))
	}
	for id := range a.sc.members {
		if id == except {
			continue
		}
		if err := tr.Send(id, t, ch, payload); err != nil && !errors.Is(err, netstack.ErrNoSuchClient) {
			return transportErr(err)
		}
	}
	return nil
}

func (h *moduleHost) Kick(client uint32, detail string) error {
	if _, err := h.member(client); err != nil {
		return err
	}
	return transportErr(h.inst.m.cfg.Transport.Kick(client, wire.DisconnectKicked, detail))
}

// transportErr says "the client is gone" in the contract's words: a module
// matches module.ErrNoClient, whatever the transport calls it.
func transportErr(err error) error {
	if errors.Is(err, netstack.ErrNoSuchClient) || errors.Is(err, netstack.ErrServerClosed) {
		return fmt.Errorf("%w (%v)", module.ErrNoClient, err)
	}
	return err
}

func (h *moduleHost) Log() *slog.Logger { return h.inst.log }

func (h *moduleHost) Fault(err error) { h.inst.fault(err) }

func (h *moduleHost) Client(id uint32) (module.ClientInfo, bool) {
	ci, ok := h.inst.m.clients[id]
	if !ok || !h.sees(id) {
		return module.ClientInfo{}, false
	}
	tr := h.inst.m.cfg.Transport
	if st, ok := tr.ClientStats(id); ok {
		ci.Ping = st.Ping
		ci.Link = module.Link{RTTVariance: st.RTTVariance, Loss: st.ProbeLoss, Bandwidth: st.Bandwidth,
			SendRate: st.SendRate, QueueDelay: st.SendQueueDelay, Backlogged: st.Backlogged}
	}
	ci.ChannelBinding, _ = tr.ChannelBinding(id)
	return ci, true
}

// sees reports whether client is in the Host's room; the own Host of an
// instance that serves many rooms sees the clients of all of them.
func (h *moduleHost) sees(client uint32) bool {
	if h.att == nil && h.inst.multi {
		for _, a := range h.inst.rooms {
			if a.sc.has(client) {
				return true
			}
		}
		return false
	}
	a, err := h.room()
	return err == nil && a.sc.has(client)
}

func (h *moduleHost) Clients() []module.ClientInfo {
	ids := h.ClientIDs()
	out := make([]module.ClientInfo, 0, len(ids))
	for _, id := range ids {
		if ci, ok := h.Client(id); ok {
			out = append(out, ci)
		}
	}
	return out
}

// ClientIDs lists the ids of the clients Clients lists, in id order,
// without their facts (a plugin's adapter gathers those a few at a tick).
func (h *moduleHost) ClientIDs() []uint32 {
	var ids []uint32
	if h.att == nil && h.inst.multi {
		for _, a := range h.inst.rooms {
			ids = append(ids, a.sc.memberIDs()...)
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
	} else if a, err := h.room(); err == nil {
		ids = a.sc.memberIDs()
	}
	return ids
}

// Server is the room's facts, or the server's for the own Host of an
// instance that serves many rooms.
func (h *moduleHost) Server() module.ServerInfo {
	var si module.ServerInfo
	if a, err := h.room(); err == nil {
		si = a.sc.Info()
		si.Room.ID = a.sc.ID
	} else {
		si = h.inst.m.cfg.Server()
	}
	si = h.inst.m.withDrain(si)
	si.ModulesDir = h.inst.m.moduleDir("")
	if h.inst.manifest.Name != "" {
		si.DataDir = h.inst.m.moduleDir(h.inst.manifest.Name)
	}
	return si
}

// StartInfo is what the instance's start is for (module.Starter): its
// first room, also for an instance that serves many rooms, whose own Host
// is scoped to none. An instance not attached anywhere starts for the
// whole server.
func (h *moduleHost) StartInfo() module.StartInfo {
	first := h // the own Host of a one-room instance is its room's
	if h.att == nil && h.inst.multi && len(h.inst.rooms) > 0 {
		first = h.inst.rooms[0].host
	}
	return module.StartInfo{Server: first.Server(), EntityIDs: first.EntityIDs()}
}

// AddScore goes to the room's match, which ignores a client not in it.
func (h *moduleHost) AddScore(client uint32, score, kills, deaths int32) {
	if a, err := h.room(); err == nil {
		a.sc.AddScore(client, score, kills, deaths)
	}
}

// SetArea goes to the room, which announces it when its module is not a
// match.
func (h *moduleHost) SetArea(name string) error {
	if name != "" && !wire.ValidName([]byte(name), module.MaxAreaLen) {
		return fmt.Errorf("area %q: %w", name, module.ErrBadArea)
	}
	a, err := h.room()
	if err != nil {
		return err
	}
	a.sc.SetArea(name)
	return nil
}

func (h *moduleHost) KV() (module.KV, error) {
	if h.inst.kv == nil {
		kv, err := kvfile.Open(filepath.Join(h.inst.m.moduleDir(h.inst.manifest.Name), "kv.json"))
		if err != nil {
			return nil, fmt.Errorf("module %s: kv store: %w", h.inst.manifest.Name, err)
		}
		h.inst.kv = kv
	}
	return h.inst.kv, nil
}

func (h *moduleHost) Now() time.Time { return h.inst.m.now }

func (h *moduleHost) SetMetric(name string, value float64) error {
	if h.inst.metrics == nil {
		return fmt.Errorf("metric %q: %w", name, metricset.ErrUnknown)
	}
	return h.inst.metrics.Set(name, value)
}

func (h *moduleHost) AddMetric(name string, delta float64) error {
	if h.inst.metrics == nil {
		return fmt.Errorf("metric %q: %w", name, metricset.ErrUnknown)
	}
	return h.inst.metrics.Add(name, delta)
}

func (h *moduleHost) After(d time.Duration, fn func()) module.TimerID {
	return h.inst.timers.Add(h.inst.m.now, d, 0, fn)
}

func (h *moduleHost) Every(period time.Duration, fn func()) module.TimerID {
	return h.inst.timers.Add(h.inst.m.now, period, period, fn)
}

func (h *moduleHost) Cancel(id module.TimerID) bool { return h.inst.timers.Cancel(id) }

// world returns the room's replicator and the instance's block in it.
func (h *moduleHost) world() (*replicate.Replicator, replicate.Block, error) {
	a, err := h.room()
	if err != nil {
		return nil, 0, err
	}
	if a.sc.World == nil || a.block == 0 {
		return nil, 0, module.ErrNoWorld
	}
	return a.sc.World, a.block, nil
}

func (h *moduleHost) EntityIDs() module.IDRange {
	if a, err := h.room(); err == nil {
		return a.block.Range()
	}
	return module.IDRange{}
}

func (h *moduleHost) SpawnEntity(s module.Spawn) (uint32, error) {
	w, b, err := h.world()
	if err != nil {
		return 0, err
	}
	return w.Spawn(b, s)
}

func (h *moduleHost) DestroyEntity(id uint32) error {
	w, b, err := h.world()
	if err != nil {
		return err
	}
	return w.Destroy(b, id)
}

func (h *moduleHost) SetEntityPosition(id uint32, pos wire.Vec3, teleport bool) error {
	w, b, err := h.world()
	if err != nil {
		return err
	}
	return w.SetPosition(b, id, pos, teleport)
}

func (h *moduleHost) SetEntityFields(id uint32, values ...gamemsg.FieldValue) error {
	w, b, err := h.world()
	if err != nil {
		return err
	}
	return w.SetFields(b, id, values...)
}

func (h *moduleHost) SetEntityOwner(id, client uint32) error {
	w, b, err := h.world()
	if err != nil {
		return err
	}
	return w.SetOwner(b, id, client)
}

func (h *moduleHost) SetEntityParty(id, party uint32) error {
	w, b, err := h.world()
	if err != nil {
		return err
	}
	return w.SetParty(b, id, party)
}

func (h *moduleHost) SetClientView(client uint32, v module.ClientView) error {
	w, _, err := h.world()
	if err != nil {
		return err
	}
	return w.SetClientView(client, v)
}

func (h *moduleHost) Raycast(shooter uint32, origin, dir wire.Vec3, maxDist float32) (module.Hit, error) {
	w, b, err := h.world()
	if err != nil {
		return module.Hit{}, err
	}
	return w.Raycast(b, shooter, origin, dir, maxDist)
}
