package module

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/internal/kvfile"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// moduleHost is the Host handed to one module instance.
type moduleHost struct{ inst *instance }

var _ Host = (*moduleHost)(nil)

// Errors of the module Host.
var (
	// ErrNotYourType is returned when a module sends a type it may not send.
	ErrNotYourType = errors.New("module may only send its own types or built-in server-to-client types")
	// ErrReplicated is returned when a module sends a message that entity
	// replication owns (EntitySpawn, EntityStateUpdate, EntityDestroy,
	// GameStateSync): use the entity API instead.
	ErrReplicated = errors.New("entity replication sends this type; use the entity API (SpawnEntity, SetEntityFields, DestroyEntity)")
	// ErrNoWorld is returned by the entity API of a manager without a
	// replicator (Config.World).
	ErrNoWorld = errors.New("this server has no entity replication")
)

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
		return 0, fmt.Errorf("send type %d (owned by %s): %w", t, owner, ErrNotYourType)
	}
	switch t {
	case gamemsg.TypeEntitySpawn, gamemsg.TypeEntityStateUpdate, gamemsg.TypeEntityDestroy, gamemsg.TypeGameStateSync:
		return 0, fmt.Errorf("send %s: %w", t, ErrReplicated)
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
	return h.inst.m.cfg.Transport.Send(client, t, ch, payload)
}

func (h *moduleHost) Broadcast(t wire.MessageType, payload []byte) error {
	return h.BroadcastExcept(0, t, payload)
}

func (h *moduleHost) BroadcastExcept(except uint32, t wire.MessageType, payload []byte) error {
	ch, err := h.channelFor(t, payload)
	if err != nil {
		return err
	}
	return h.inst.m.cfg.Transport.BroadcastExcept(except, t, ch, payload)
}

func (h *moduleHost) Kick(client uint32, detail string) error {
	return h.inst.m.cfg.Transport.Kick(client, wire.DisconnectKicked, detail)
}

func (h *moduleHost) Log() *slog.Logger { return h.inst.log }

func (h *moduleHost) Fault(err error) { h.inst.fault(err) }

func (h *moduleHost) Client(id uint32) (ClientInfo, bool) {
	ci, ok := h.inst.m.clients[id]
	if !ok {
		return ClientInfo{}, false
	}
	tr := h.inst.m.cfg.Transport
	if st, ok := tr.ClientStats(id); ok {
		ci.Ping = st.Ping
	}
	ci.ChannelBinding, _ = tr.ChannelBinding(id)
	return ci, true
}

func (h *moduleHost) Clients() []ClientInfo {
	ids := make([]uint32, 0, len(h.inst.m.clients))
	for id := range h.inst.m.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]ClientInfo, 0, len(ids))
	for _, id := range ids {
		ci, _ := h.Client(id)
		out = append(out, ci)
	}
	return out
}

func (h *moduleHost) Server() ServerInfo {
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

func (h *moduleHost) KV() KV {
	if h.inst.kv == nil {
		kv, err := kvfile.Open(h.inst.m.moduleDir(h.inst.manifest.Name) + "/kv.json")
		if err != nil {
			h.inst.log.Error("kv store unavailable", "err", err)
			return brokenKV{err}
		}
		h.inst.kv = kv
	}
	return h.inst.kv
}

// brokenKV answers every call with the error that kept the store from opening.
type brokenKV struct{ err error }

func (b brokenKV) Get(string) (string, bool) { return "", false }
func (b brokenKV) Set(string, string) error  { return b.err }
func (b brokenKV) Delete(string) error       { return b.err }
func (b brokenKV) Keys() []string            { return nil }

// world returns the replicator and the module's block.
func (h *moduleHost) world() (*replicate.Replicator, replicate.Block, error) {
	w := h.inst.m.cfg.World
	if w == nil || h.inst.block == 0 {
		return nil, 0, ErrNoWorld
	}
	return w, h.inst.block, nil
}

func (h *moduleHost) EntityIDs() replicate.IDRange { return h.inst.block.Range() }

func (h *moduleHost) SpawnEntity(s replicate.Spawn) (uint32, error) {
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

func (h *moduleHost) SetClientView(client uint32, v replicate.ClientView) error {
	w, _, err := h.world()
	if err != nil {
		return err
	}
	return w.SetClientView(client, v)
}

func (h *moduleHost) Raycast(shooter uint32, origin, dir wire.Vec3, maxDist float32) (replicate.Hit, error) {
	w, b, err := h.world()
	if err != nil {
		return replicate.Hit{}, err
	}
	return w.Raycast(b, shooter, origin, dir, maxDist)
}
