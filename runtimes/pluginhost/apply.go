package pluginhost

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/sparkhost/sparkhost/internal/pluginwire"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// What an answer may carry. A plugin's actions are untrusted input: each is
// checked by the Host it goes through (schemas, ownership, entity rules),
// and these bound what one answer may cost the game thread.
const (
	// maxActions is the most actions one answer may carry; the rest are
	// dropped with one fault.
	maxActions = 1 << 16
	// maxFaultText bounds the text of a fault the plugin reports.
	maxFaultText = 1 << 10
)

// apply carries out a batch of actions through the module's Host, in order.
// A failed action is a fault of the module; a panic while applying one (a
// bug on this side of the boundary) is recovered and counted as a fault,
// and the next action is applied.
func (m *Module) apply(acts []*pluginv1.Action) {
	if len(acts) > maxActions {
		m.host.Fault(fmt.Errorf("the plugin sent %d actions in one answer; the limit is %d, the rest were dropped", len(acts), maxActions))
		acts = acts[:maxActions]
	}
	for _, a := range acts {
		m.applyOne(a)
	}
}

func (m *Module) applyOne(a *pluginv1.Action) {
	h, err := m.hostFor(a.GetRoom())
	if err != nil {
		m.host.Log().Debug("plugin action for a room that is gone", "action", a.GetKind().String(), "room", a.GetRoom())
		return
	}
	defer func() {
		if v := recover(); v != nil {
			h.Log().Debug("panic applying a plugin action", "action", a.GetKind().String(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			h.Fault(fmt.Errorf("panic applying the plugin's %s action: %v", a.GetKind(), v))
		}
	}()
	switch a.GetKind() {
	case pluginv1.ActionKind_ACTION_SEND:
		err = h.Send(a.GetClient(), wire.MessageType(a.GetType()), a.GetPayload())
	case pluginv1.ActionKind_ACTION_BROADCAST:
		err = h.BroadcastExcept(a.GetClient(), wire.MessageType(a.GetType()), a.GetPayload())
	case pluginv1.ActionKind_ACTION_KICK:
		err = h.Kick(a.GetClient(), a.GetText())
	case pluginv1.ActionKind_ACTION_SCORE:
		h.AddScore(a.GetClient(), a.GetScore(), a.GetKills(), a.GetDeaths())
	case pluginv1.ActionKind_ACTION_SET_AREA:
		err = h.SetArea(a.GetText())
	case pluginv1.ActionKind_ACTION_FAULT:
		text := a.GetText()
		if len(text) > maxFaultText {
			text = text[:maxFaultText] + "…"
		}
		h.Fault(errors.New(text))
	case pluginv1.ActionKind_ACTION_ENTITY_SPAWN, pluginv1.ActionKind_ACTION_ENTITY_UPDATE,
		pluginv1.ActionKind_ACTION_ENTITY_DESTROY, pluginv1.ActionKind_ACTION_ENTITY_OWNER,
		pluginv1.ActionKind_ACTION_ENTITY_PARTY, pluginv1.ActionKind_ACTION_CLIENT_VIEW:
		err = applyEntity(h, a)
	default:
		err = fmt.Errorf("unknown action kind %d", a.GetKind())
	}
	switch {
	case err == nil:
	case goneRoom(err):
		h.Log().Debug("plugin action for a client or room that is gone", "action", a.GetKind().String(), "client", a.GetClient(), "room", a.GetRoom())
	default:
		h.Fault(fmt.Errorf("%s: %w", a.GetKind(), err))
	}
}

// applyEntity carries out one entity action.
func applyEntity(h module.Host, a *pluginv1.Action) error {
	var vals []gamemsg.FieldValue
	if len(a.GetFields()) > 0 {
		var err error
		if vals, err = pluginwire.ParseFieldValues(a.GetFields()); err != nil {
			return err
		}
	}
	id := a.GetEntity()
	switch a.GetKind() {
	case pluginv1.ActionKind_ACTION_ENTITY_SPAWN:
		switch {
		case id == 0:
			return errors.New("spawn without an id (the SDK picks ids in the module's block)")
		case a.GetEntityType() > 0xFFFF:
			return fmt.Errorf("entity type %d out of range", a.GetEntityType())
		}
		_, err := h.SpawnEntity(module.Spawn{
			ID: id, Type: uint16(a.GetEntityType()), Owner: a.GetClient(), Party: a.GetParty(),
			Position: pluginwire.Vec3FromPB(a.GetPosition()), Global: a.GetGlobal(), Fields: vals,
		})
		return err
	case pluginv1.ActionKind_ACTION_ENTITY_UPDATE:
		if a.GetPosition() != nil {
			if err := h.SetEntityPosition(id, pluginwire.Vec3FromPB(a.GetPosition()), a.GetTeleport()); err != nil {
				return err
			}
		}
		if len(vals) > 0 {
			return h.SetEntityFields(id, vals...)
		}
		return nil
	case pluginv1.ActionKind_ACTION_ENTITY_DESTROY:
		return h.DestroyEntity(id)
	case pluginv1.ActionKind_ACTION_ENTITY_OWNER:
		return h.SetEntityOwner(id, a.GetClient())
	case pluginv1.ActionKind_ACTION_ENTITY_PARTY:
		return h.SetEntityParty(id, a.GetParty())
	default: // ACTION_CLIENT_VIEW
		return h.SetClientView(a.GetClient(), module.ClientView{Party: a.GetParty(), Spectator: a.GetSpectator(), Focus: id})
	}
}
