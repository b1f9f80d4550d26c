// Command entities is the test plugin of the entity API (host
// plugin_entity_test.go): every admitted client gets a "bot" entity it owns,
// moved by its ClientInputs (answered with InputAck); a fire button shoots
// a lag-compensated ray along +Z and reports what it hit with a "shot"
// message; a global "clock" entity counts ticks; a client's entity goes
// when it leaves.
package main

import (
	"encoding/binary"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

const (
	botType   = 40
	clockType = 41
	shotMsg   = 1300

	fPos    = 0
	fHP     = 1
	fSecret = 2
	fTicks  = 0
)

type entities struct {
	plugin.Base
	h     module.Host
	bots  map[uint32]uint32 // client → entity
	clock uint32
	ticks uint32
}

func (e *entities) Manifest() module.Manifest {
	return module.Manifest{
		Name: "entities", Version: "1", Inputs: true,
		Messages: []wire.Schema{{ID: shotMsg, Name: "shot", Direction: wire.ServerToClient, Channel: wire.Reliable,
			MinLen: 4, MaxLen: 4, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true}},
		EntityTypes: []module.EntityType{
			{ID: botType, Name: "bot", PositionField: "pos",
				Fields: []gamemsg.FieldSchema{
					{Name: "pos", Kind: gamemsg.KindVec3},
					{Name: "hp", Kind: gamemsg.KindInt32},
					{Name: "secret", Kind: gamemsg.KindUint32, Visibility: gamemsg.VisibilityPrivate},
				},
				Box: module.AABB{Min: wire.Vec3{X: -0.5, Z: -0.5}, Max: wire.Vec3{X: 0.5, Y: 2, Z: 0.5}}},
			{ID: clockType, Name: "clock", Fields: []gamemsg.FieldSchema{{Name: "ticks", Kind: gamemsg.KindUint32}}},
		},
	}
}

func (e *entities) Load(h module.Host) error {
	e.h, e.bots = h, map[uint32]uint32{}
	return nil
}

func (e *entities) OnAdmitted(c module.ClientInfo) {
	id, err := e.h.SpawnEntity(module.Spawn{Type: botType, Owner: c.ID,
		Position: wire.Vec3{X: float32(c.ID) * 3},
		Fields: []gamemsg.FieldValue{{Index: fHP, Kind: gamemsg.KindInt32, Int: 100},
			{Index: fSecret, Kind: gamemsg.KindUint32, Uint: 0xC0FFEE00 + c.ID}}})
	if err != nil {
		e.h.Fault(err)
		return
	}
	e.bots[c.ID] = id
}

func (e *entities) OnLeft(c module.ClientInfo, _ wire.DisconnectReason) {
	if id, ok := e.bots[c.ID]; ok {
		e.h.DestroyEntity(id)
		delete(e.bots, c.ID)
	}
}

func (e *entities) OnInput(c module.ClientInfo, in gamemsg.ClientInput) {
	id, ok := e.bots[c.ID]
	if !ok {
		return
	}
	pos := wire.Vec3{X: float32(c.ID)*3 + in.MoveRight, Z: in.MoveForward}
	e.h.SetEntityPosition(id, pos, false)
	e.h.SetEntityFields(id, gamemsg.FieldValue{Index: fHP, Kind: gamemsg.KindInt32, Int: int32(in.InputSeq)})
	ack := gamemsg.InputAck{LastInputSeq: in.InputSeq, Position: pos, Yaw: in.LookYaw, Flags: gamemsg.FlagGrounded}
	e.h.Send(c.ID, gamemsg.TypeInputAck, gamemsg.AppendInputAck(nil, &ack))
	if in.Buttons&gamemsg.ButtonFire != 0 {
		hit, err := e.h.Raycast(c.ID, wire.Vec3{X: in.LookYaw, Y: 1, Z: -50}, wire.Vec3{Z: 1}, 100)
		if err != nil {
			e.h.Fault(err)
			return
		}
		e.h.Send(c.ID, shotMsg, binary.LittleEndian.AppendUint32(nil, hit.Entity))
	}
}

func (e *entities) OnTick(module.Tick) {
	if e.clock == 0 {
		var err error
		if e.clock, err = e.h.SpawnEntity(module.Spawn{Type: clockType, Global: true}); err != nil {
			e.h.Fault(err)
			return
		}
	}
	e.ticks++
	if e.ticks%30 == 0 {
		e.h.SetEntityFields(e.clock, gamemsg.FieldValue{Index: fTicks, Kind: gamemsg.KindUint32, Uint: e.ticks})
	}
}

func main() { plugin.Serve(&entities{}) }
