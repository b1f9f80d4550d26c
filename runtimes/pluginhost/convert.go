package pluginhost

import (
	"fmt"
	"time"

	"github.com/sparkhost/sparkhost/internal/pluginwire"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func serverToPB(s module.ServerInfo) *pluginv1.ServerInfo {
	p := &pluginv1.ServerInfo{}
	fillServer(p, s)
	return p
}

// fillServer writes s into p (the Step request reuses one p every tick).
func fillServer(p *pluginv1.ServerInfo, s module.ServerInfo) {
	p.Name, p.Map, p.Mode, p.MatchState = s.Name, s.Map, uint32(s.Mode), uint32(s.MatchState)
	p.TickRate, p.Tick, p.Players, p.MaxPlayers = int32(s.TickRate), s.Tick, int32(s.Players), int32(s.MaxPlayers)
	p.DataDir, p.ModulesDir = s.DataDir, s.ModulesDir
	p.ReplicationRate, p.LagWindowNs = int32(s.ReplicationRate), int64(s.LagWindow)
	p.Draining, p.DrainDeadlineUnixNs = s.Draining, unixNano(s.DrainDeadline)
	if s.Room.ID == 0 {
		p.Room = nil
		return
	}
	if p.Room == nil {
		p.Room = &pluginv1.RoomInfo{}
	}
	roomToPB(p.Room, s.Room)
}

// unixNano is t in nanoseconds since 1970, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// roomToPB writes a room's facts into p.
func roomToPB(p *pluginv1.RoomInfo, r module.RoomInfo) {
	p.Id, p.Name, p.Mode, p.Owner = uint32(r.ID), r.Name, r.Mode, r.Owner
	p.Capacity, p.State = int32(min(r.Capacity, 1<<30)), uint32(r.State)
}

func clientToPB(c module.ClientInfo) *pluginv1.ClientInfo {
	pc := &pluginv1.ClientInfo{Id: c.ID, Name: c.Name, PingNs: int64(c.Ping), ChannelBinding: c.ChannelBinding[:], Ticket: c.Ticket, Present: c.Present}
	if c.Addr.IsValid() {
		pc.Addr = c.Addr.String()
	}
	return pc
}

// Limits on what a plugin may declare, so a hostile manifest cannot make
// the server allocate without bound.
const (
	maxManifestMessages    = 4096
	maxManifestCommands    = 256
	maxManifestEntityTypes = 1024
)

func manifestFromPB(p *pluginv1.Manifest) (module.Manifest, error) {
	if p == nil {
		return module.Manifest{}, fmt.Errorf("the plugin sent no manifest")
	}
	if len(p.GetMessages()) > maxManifestMessages || len(p.GetCommands()) > maxManifestCommands {
		return module.Manifest{}, fmt.Errorf("manifest declares %d message types and %d commands; the limits are %d and %d",
			len(p.GetMessages()), len(p.GetCommands()), maxManifestMessages, maxManifestCommands)
	}
	man := module.Manifest{Name: p.GetName(), Version: p.GetVersion()}
	for _, ps := range p.GetMessages() {
		s, err := pluginwire.SchemaFromPB(ps)
		if err != nil {
			return module.Manifest{}, err
		}
		man.Messages = append(man.Messages, s)
	}
	for _, c := range p.GetCommands() {
		man.Commands = append(man.Commands, module.CommandSpec{Name: c.GetName(), Usage: c.GetUsage(), Help: c.GetHelp()})
	}
	if n := len(p.GetEntityTypes()); n > maxManifestEntityTypes {
		return module.Manifest{}, fmt.Errorf("manifest declares %d entity types; the limit is %d", n, maxManifestEntityTypes)
	}
	for _, pt := range p.GetEntityTypes() {
		t, err := entityTypeFromPB(pt)
		if err != nil {
			return module.Manifest{}, err
		}
		man.EntityTypes = append(man.EntityTypes, t)
	}
	man.Inputs = p.GetInputs()
	man.Rooms = p.GetRooms()
	man.NoMatch = p.GetNoMatch()
	man.AnswersNextTick = p.GetAnswersNextTick()
	if p.GetProtocol() > 0xFFFF || p.GetOldestProtocol() > 0xFFFF {
		return module.Manifest{}, fmt.Errorf("manifest declares protocol %d, oldest %d: versions are 1..65535", p.GetProtocol(), p.GetOldestProtocol())
	}
	man.Protocol, man.OldestProtocol = uint16(p.GetProtocol()), uint16(p.GetOldestProtocol())
	return man, nil
}

// entityTypeFromPB converts an entity type; the replicator checks the rest
// when the module registers it.
func entityTypeFromPB(p *pluginv1.EntityType) (module.EntityType, error) {
	if p.GetId() > 0xFFFF || len(p.GetFields()) > gamemsg.MaxFields {
		return module.EntityType{}, fmt.Errorf("entity type %d (%q): id above 65535 or more than %d fields", p.GetId(), p.GetName(), gamemsg.MaxFields)
	}
	t := module.EntityType{
		ID: uint16(p.GetId()), Name: p.GetName(), PositionField: p.GetPositionField(),
		Box: module.AABB{Min: pluginwire.Vec3FromPB(p.GetBoxMin()), Max: pluginwire.Vec3FromPB(p.GetBoxMax())},
	}
	for _, f := range p.GetFields() {
		if f.GetKind() > 0xFF || f.GetVisibility() > 0xFF {
			return module.EntityType{}, fmt.Errorf("entity type %d field %q: kind %d or visibility %d out of range", p.GetId(), f.GetName(), f.GetKind(), f.GetVisibility())
		}
		t.Fields = append(t.Fields, gamemsg.FieldSchema{Name: f.GetName(), Kind: gamemsg.FieldKind(f.GetKind()), Visibility: gamemsg.Visibility(f.GetVisibility())})
	}
	return t, nil
}
