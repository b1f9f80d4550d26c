package modules

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

// moduleHost is the Host handed to one module instance.
type moduleHost struct{ inst *instance }

var _ module.Host = (*moduleHost)(nil)

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
	switch t {
	case gamemsg.TypeEntitySpawn, gamemsg.TypeEntityStateUpdate, gamemsg.TypeEntityDestroy, gamemsg.TypeGameStateSync:
		return 0, fmt.Errorf("send %s: %w", t, module.ErrReplicated)
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
	return transportErr(h.inst.m.cfg.Transport.Send(client, t, ch, payload))
}

func (h *moduleHost) Broadcast(t wire.MessageType, payload []byte) error {
	return h.BroadcastExcept(0, t, payload)
}

func (h *moduleHost) BroadcastExcept(except uint32, t wire.MessageType, payload []byte) error {
	ch, err := h.channelFor(t, payload)
	if err != nil {
		return err
	}
	return transportErr(h.inst.m.cfg.Transport.BroadcastExcept(except, t, ch, payload))
}

func (h *moduleHost) Kick(client uint32, detail string) error {
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
	if !ok {
		return module.ClientInfo{}, false
	}
	tr := h.inst.m.cfg.Transport
	if st, ok := tr.ClientStats(id); ok {
		ci.Ping = st.Ping
	}
	ci.ChannelBinding, _ = tr.ChannelBinding(id)
	return ci, true
}

func (h *moduleHost) Clients() []module.ClientInfo {
	ids := make([]uint32, 0, len(h.inst.m.clients))
	for id := range h.inst.m.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]module.ClientInfo, 0, len(ids))
	for _, id := range ids {
		ci, _ := h.Client(id)
		out = append(out, ci)
	}
	return out
}

func (h *moduleHost) Server() module.ServerInfo {
	si := h.inst.m.cfg.Server()
	si.ModulesDir = h.inst.m.moduleDir("")
	if h.inst.manifest.Name != "" {
		si.DataDir = h.inst.m.moduleDir(h.inst.manifest.Name)
	}
	return si
}

func (h *moduleHost) AddScore(client uint32, score, kills, deaths int32) {
	h.inst.m.cfg.AddScore(client, score, kills, deaths)
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

// world returns the replicator and the module's block.
func (h *moduleHost) world() (*replicate.Replicator, replicate.Block, error) {
	w := h.inst.m.cfg.World
	if w == nil || h.inst.block == 0 {
		return nil, 0, module.ErrNoWorld
	}
	return w, h.inst.block, nil
}

func (h *moduleHost) EntityIDs() module.IDRange { return h.inst.block.Range() }

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
