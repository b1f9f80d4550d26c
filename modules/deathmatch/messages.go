package deathmatch

import (
	"fmt"
	"slices"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// The module's own message types (UserDefined, §10), all server → client
// on the ReliableOrdered channel. Little-endian, as every NetBuffer field.
// Kills, deaths and scores themselves travel in the host's ScoreUpdate, and
// spawns in PlayerRespawn.
const (
	// TypeFrag (9 bytes): killer u32, victim u32, flags u8 (FragTeamKill,
	// FragSuicide). Broadcast on every kill that counts.
	TypeFrag wire.MessageType = 1300
	// TypeHit (12 bytes): attacker u32, victim u32, damage u16, health u16
	// (the victim's health left). Sent to the attacker and the victim.
	TypeHit wire.MessageType = 1301
	// TypeTeam (5 bytes): client u32, team u8 (1 red, 2 blue). Broadcast
	// in TeamDeathmatch when a player joins a team or is moved to another.
	TypeTeam wire.MessageType = 1302
	// TypeMap (2..66 bytes): name str (u16 length, 1..64 bytes of UTF-8;
	// the declared field takes 0..64, ParseMap refuses an empty name).
	// The map the module plays: sent to every client when it is admitted
	// and broadcast when the module loads the next map, before the
	// PlayerRespawns there. The host announces a new map only with the
	// MatchStart that ends its warmup; a predicting client needs the
	// map's obstacles from the first respawn on.
	TypeMap wire.MessageType = 1303
)

// Frag flags.
const (
	FragTeamKill uint8 = 1 << iota
	FragSuicide
)

// schemas declare each message's fields, so that a client (the stock
// console, a generated TypeScript client) decodes them without this code;
// the transport derives the sizes above from them.
var schemas = []wire.Schema{
	{ID: TypeFrag, Name: "Frag", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, RequiresAdmitted: true,
		Fields: []wire.Field{{Name: "killer", Kind: wire.KindU32}, {Name: "victim", Kind: wire.KindU32}, {Name: "flags", Kind: wire.KindU8}}},
	{ID: TypeHit, Name: "Hit", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, RequiresAdmitted: true,
		Fields: []wire.Field{{Name: "attacker", Kind: wire.KindU32}, {Name: "victim", Kind: wire.KindU32},
			{Name: "damage", Kind: wire.KindU16}, {Name: "health", Kind: wire.KindU16}}},
	{ID: TypeTeam, Name: "Team", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, RequiresAdmitted: true,
		Fields: []wire.Field{{Name: "client", Kind: wire.KindU32}, {Name: "team", Kind: wire.KindU8}}},
	{ID: TypeMap, Name: "Map", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, RequiresAdmitted: true,
		Fields: []wire.Field{{Name: "name", Kind: wire.KindStr, Max: gamemsg.MaxMapLen}}},
}

// Frag is the payload of TypeFrag.
type Frag struct {
	Killer, Victim uint32
	Flags          uint8
}

// Hit is the payload of TypeHit.
type Hit struct {
	Attacker, Victim uint32
	Damage, Health   uint16
}

// AppendFrag appends the encoding of f.
func AppendFrag(dst []byte, f Frag) []byte {
	w := wire.NewWriter(dst)
	w.U32(f.Killer)
	w.U32(f.Victim)
	w.U8(f.Flags)
	return w.Bytes()
}

// ParseFrag parses a TypeFrag payload.
func ParseFrag(p []byte) (Frag, error) {
	r := wire.NewReader(p)
	f := Frag{Killer: r.U32(), Victim: r.U32(), Flags: r.U8()}
	return f, r.Finish()
}

// AppendHit appends the encoding of h.
func AppendHit(dst []byte, h Hit) []byte {
	w := wire.NewWriter(dst)
	w.U32(h.Attacker)
	w.U32(h.Victim)
	w.U16(h.Damage)
	w.U16(h.Health)
	return w.Bytes()
}

// ParseHit parses a TypeHit payload.
func ParseHit(p []byte) (Hit, error) {
	r := wire.NewReader(p)
	h := Hit{Attacker: r.U32(), Victim: r.U32(), Damage: r.U16(), Health: r.U16()}
	return h, r.Finish()
}

// AppendTeam appends the encoding of a TypeTeam payload.
func AppendTeam(dst []byte, client uint32, team uint8) []byte {
	w := wire.NewWriter(dst)
	w.U32(client)
	w.U8(team)
	return w.Bytes()
}

// ParseTeam parses a TypeTeam payload.
func ParseTeam(p []byte) (client uint32, team uint8, err error) {
	r := wire.NewReader(p)
	client, team = r.U32(), r.U8()
	return client, team, r.Finish()
}

// AppendMap appends the encoding of a TypeMap payload.
func AppendMap(dst []byte, name string) []byte {
	w := wire.NewWriter(dst)
	w.Str(name)
	return w.Bytes()
}

// ParseMap parses a TypeMap payload.
func ParseMap(p []byte) (string, error) {
	r := wire.NewReader(p)
	name := r.Str()
	if err := r.Finish(); err != nil {
		return "", err
	}
	if !wire.ValidName([]byte(name), gamemsg.MaxMapLen) {
		return "", fmt.Errorf("deathmatch: Map: %q is not a valid map name", name)
	}
	return name, nil
}

// Schemas returns the module's message schemas: a client registers them
// (netstack.ClientConfig.Registry) to receive Frag, Hit and Team.
func Schemas() []wire.Schema { return slices.Clone(schemas) }

// init derives each typed schema's sizes and screened string from its
// fields (wire.Schema.Normalize), so that Schemas gives the receive rule a
// client applies whether it reads the fields or only the sizes (a v3
// client, which knows no fields).
func init() {
	for i := range schemas {
		if err := schemas[i].Normalize(); err != nil {
			panic(err) // a schema of this file breaks the field rules
		}
	}
}
