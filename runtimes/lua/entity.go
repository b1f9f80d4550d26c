package lua

import (
	"math"

	lua "github.com/yuin/gopher-lua"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Entities and input: spark.entity_type (top level), spark.entity_spawn,
// entity_set, entity_move, entity_destroy, entity_owner, entity_party,
// spark.client_view, spark.raycast, spark.on_input and spark.input_ack.
// Fields are named by their declared names; values are Lua booleans,
// integers, numbers and {x=, y=, z=} tables by the field's kind.

// maxEntityTypes bounds the entity types one module declares.
const maxEntityTypes = 64

// entityType is a declared type with its field names.
type entityType struct {
	module.EntityType
	index map[string]int
}

var (
	kinds = map[string]gamemsg.FieldKind{"bool": gamemsg.KindBool, "int32": gamemsg.KindInt32, "uint32": gamemsg.KindUint32,
		"float": gamemsg.KindFloat, "vec3": gamemsg.KindVec3}
	visibilities = map[string]gamemsg.Visibility{"public": gamemsg.VisibilityPublic, "private": gamemsg.VisibilityPrivate,
		"party": gamemsg.VisibilityParty, "spectator": gamemsg.VisibilitySpectator}
)

func (m *Module) openEntities(spark *lua.LTable) {
	m.L.SetFuncs(spark, map[string]lua.LGFunction{
		"entity_type":    m.luaEntityType,
		"entity_spawn":   m.luaEntitySpawn,
		"entity_set":     m.luaEntitySet,
		"entity_move":    m.luaEntityMove,
		"entity_destroy": m.luaEntityDestroy,
		"entity_owner":   m.luaEntityOwner,
		"entity_party":   m.luaEntityParty,
		"client_view":    m.luaClientView,
		"raycast":        m.luaRaycast,
		"on_input":       m.luaOnInput,
		"input_ack":      m.luaInputAck,
	})
}

// luaEntityType is spark.entity_type{id = 1, name = "player", fields = {{name
// = "pos", kind = "vec3", visibility = "public"}, ...}, position = "pos",
// box = {min = {x=, y=, z=}, max = {...}}}; it returns the id.
func (m *Module) luaEntityType(L *lua.LState) int {
	const fn = "spark.entity_type"
	m.loadOnly(L, fn)
	f := fields{L: L, fn: fn, t: args{L: L, fn: fn}.table(1, "declaration")}
	f.only("id", "name", "fields", "position", "box")
	id := uint16(f.integer("id", 0, math.MaxUint16))
	if old, dup := m.entityTypes[id]; dup {
		L.RaiseError("%s: entity type %d is already declared (as %q)", fn, id, old.Name)
	}
	if len(m.entityTypes) >= maxEntityTypes {
		L.RaiseError("%s: a module may declare at most %d entity types", fn, maxEntityTypes)
	}
	t := &entityType{EntityType: module.EntityType{ID: id, Name: f.str("name")}, index: map[string]int{}}
	if !wire.ValidName([]byte(t.Name), wire.MaxNameLen) {
		f.fail("name", "1..32 bytes without control characters")
	}
	list, ok := f.t.RawGetString("fields").(*lua.LTable)
	if !ok && f.has("fields") {
		f.fail("fields", "an array of {name, kind, visibility} tables")
	}
	if list != nil {
		n := list.Len()
		if n > gamemsg.MaxFields {
			L.RaiseError("%s: %d fields; a type has at most %d", fn, n, gamemsg.MaxFields)
		}
		for i := 1; i <= n; i++ {
			ft, ok := list.RawGetInt(i).(*lua.LTable)
			if !ok {
				L.RaiseError("%s: fields[%d] must be a table {name = ..., kind = ..., visibility = ...}", fn, i)
			}
			ff := fields{L: L, fn: fn + " fields[" + itoa(i) + "]", t: ft}
			ff.only("name", "kind", "visibility")
			name := ff.str("name")
			if !wire.ValidName([]byte(name), wire.MaxNameLen) {
				ff.fail("name", "1..32 bytes without control characters")
			}
			if _, dup := t.index[name]; dup {
				L.RaiseError("%s: field %q is declared twice", fn, name)
			}
			kind, ok := kinds[stringField(ff, "kind")]
			if !ok {
				ff.fail("kind", `"bool", "int32", "uint32", "float" or "vec3"`)
			}
			vis := gamemsg.VisibilityPublic
			if ff.has("visibility") {
				if vis, ok = visibilities[stringField(ff, "visibility")]; !ok {
					ff.fail("visibility", `"public", "private", "party" or "spectator"`)
				}
			}
			t.index[name] = len(t.Fields)
			t.Fields = append(t.Fields, gamemsg.FieldSchema{Name: name, Kind: kind, Visibility: vis})
		}
	}
	if f.has("position") {
		t.PositionField = f.str("position")
		if i, ok := t.index[t.PositionField]; !ok || t.Fields[i].Kind != gamemsg.KindVec3 {
			f.fail("position", "the name of one of its vec3 fields")
		}
	}
	if f.has("box") {
		bt, ok := f.t.RawGetString("box").(*lua.LTable)
		if !ok {
			f.fail("box", "{min = {x=, y=, z=}, max = {x=, y=, z=}}")
		}
		bf := fields{L: L, fn: fn + " box", t: bt}
		bf.only("min", "max")
		t.Box = module.AABB{Min: vecField(bf, "min"), Max: vecField(bf, "max")}
		if t.Box.Min.X > t.Box.Max.X || t.Box.Min.Y > t.Box.Max.Y || t.Box.Min.Z > t.Box.Max.Z {
			L.RaiseError("%s: box min must be ≤ max on every axis", fn)
		}
	}
	m.entityTypes[id] = t
	m.manifest.EntityTypes = append(m.manifest.EntityTypes, t.EntityType)
	L.Push(lua.LNumber(id))
	return 1
}

func itoa(i int) string { return lua.LNumber(i).String() }

// vecField reads a {x=, y=, z=} table field of finite numbers.
func vecField(f fields, name string) wire.Vec3 {
	t, ok := f.t.RawGetString(name).(*lua.LTable)
	if !ok {
		f.fail(name, "a {x=, y=, z=} table of numbers")
	}
	v, ok := tableVec(t)
	if !ok {
		f.fail(name, "a {x=, y=, z=} table of finite numbers")
	}
	return v
}

// tableVec reads {x=, y=, z=}; missing components are 0.
func tableVec(t *lua.LTable) (wire.Vec3, bool) {
	var c [3]float32
	for i, k := range [3]string{"x", "y", "z"} {
		switch v := t.RawGetString(k).(type) {
		case *lua.LNilType:
		case lua.LNumber:
			f := float64(v)
			if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxFloat32 {
				return wire.Vec3{}, false
			}
			c[i] = float32(f)
		default:
			return wire.Vec3{}, false
		}
	}
	return wire.Vec3{X: c[0], Y: c[1], Z: c[2]}, true
}

// vecArg reads argument n as a {x=, y=, z=} table.
func vecArg(a args, n int, name string) wire.Vec3 {
	t, ok := a.L.Get(n).(*lua.LTable)
	if !ok {
		a.fail(n, name, "a {x=, y=, z=} table")
	}
	v, ok := tableVec(t)
	if !ok {
		a.fail(n, name, "a {x=, y=, z=} table of finite numbers")
	}
	return v
}

func vecTable(L *lua.LState, v wire.Vec3) *lua.LTable {
	t := L.CreateTable(0, 3)
	t.RawSetString("x", lua.LNumber(v.X))
	t.RawSetString("y", lua.LNumber(v.Y))
	t.RawSetString("z", lua.LNumber(v.Z))
	return t
}

// notWhileLoading raises for entity calls at the top level: the types are
// registered only when the file has run.
func (m *Module) notWhileLoading(L *lua.LState, fn string) {
	if m.phase == phaseLoading {
		L.RaiseError("%s: entities exist once the module has loaded; spawn them in a hook (on_admitted, on_tick, a timer)", fn)
	}
}

// fieldValues converts a {name = value} table into values of type t.
func (m *Module) fieldValues(L *lua.LState, fn string, t *entityType, tbl *lua.LTable) []gamemsg.FieldValue {
	var vals []gamemsg.FieldValue
	tbl.ForEach(func(k, v lua.LValue) {
		name, ok := k.(lua.LString)
		i, known := t.index[string(name)]
		if !ok || !known {
			L.RaiseError("%s: entity type %q has no field %s", fn, t.Name, describe(k))
		}
		fv := gamemsg.FieldValue{Index: i, Kind: t.Fields[i].Kind}
		bad := func(want string) {
			L.RaiseError("%s: field %q must be %s, got %s", fn, name, want, describe(v))
		}
		switch fv.Kind {
		case gamemsg.KindBool:
			b, ok := v.(lua.LBool)
			if !ok {
				bad("true or false")
			}
			fv.Bool = bool(b)
		case gamemsg.KindInt32:
			n, ok := v.(lua.LNumber)
			if !ok || !isInteger(float64(n)) || n < math.MinInt32 || n > math.MaxInt32 {
				bad("an integer in the int32 range")
			}
			fv.Int = int32(n)
		case gamemsg.KindUint32:
			n, ok := v.(lua.LNumber)
			if !ok || !isInteger(float64(n)) || n < 0 || n > math.MaxUint32 {
				bad("an integer in 0..4294967295")
			}
			fv.Uint = uint32(n)
		case gamemsg.KindFloat:
			n, ok := v.(lua.LNumber)
			if !ok || math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) || math.Abs(float64(n)) > math.MaxFloat32 {
				bad("a finite number")
			}
			fv.Float = float32(n)
		case gamemsg.KindVec3:
			vt, ok := v.(*lua.LTable)
			if ok {
				fv.Vec, ok = tableVec(vt)
			}
			if !ok {
				bad("a {x=, y=, z=} table of finite numbers")
			}
		}
		vals = append(vals, fv)
	})
	return vals
}

// luaEntitySpawn is spark.entity_spawn{type = T, id = nil, owner = 0, party
// = 0, position = {x=, y=, z=}, global = false, fields = {name = value}} →
// id | nil, err.
func (m *Module) luaEntitySpawn(L *lua.LState) int {
	const fn = "spark.entity_spawn"
	m.notWhileLoading(L, fn)
	f := fields{L: L, fn: fn, t: args{L: L, fn: fn}.table(1, "spawn")}
	f.only("type", "id", "owner", "party", "position", "global", "fields")
	t, ok := m.entityTypes[uint16(f.integer("type", 0, math.MaxUint16))]
	if !ok {
		f.fail("type", "an entity type declared with spark.entity_type")
	}
	s := module.Spawn{Type: t.ID, Global: f.boolean("global", false)}
	if f.has("id") {
		s.ID = uint32(f.integer("id", 1, math.MaxUint32))
	}
	if f.has("owner") {
		s.Owner = uint32(f.integer("owner", 0, math.MaxUint32))
	}
	if f.has("party") {
		s.Party = uint32(f.integer("party", 0, math.MaxUint32))
	}
	if f.has("position") {
		s.Position = vecField(f, "position")
	}
	if f.has("fields") {
		ft, ok := f.t.RawGetString("fields").(*lua.LTable)
		if !ok {
			f.fail("fields", "a {name = value} table")
		}
		s.Fields = m.fieldValues(L, fn, t, ft)
	}
	id, err := m.host.SpawnEntity(s)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Error()))
		return 2
	}
	m.entities[id] = t.ID
	L.Push(lua.LNumber(id))
	return 1
}

// entityArg reads argument 1 as a live entity of the module.
func (m *Module) entityArg(a args) (uint32, *entityType) {
	id := uint32(a.integer(1, "entity", 0, math.MaxUint32))
	typ, ok := m.entities[id]
	if !ok {
		a.fail(1, "entity", "an entity this module spawned and has not destroyed")
	}
	return id, m.entityTypes[typ]
}

// luaEntitySet is spark.entity_set(id, {name = value, ...}) → true | false, err.
func (m *Module) luaEntitySet(L *lua.LState) int {
	a := args{L: L, fn: "spark.entity_set"}
	id, t := m.entityArg(a)
	vals := m.fieldValues(L, a.fn, t, a.table(2, "fields"))
	return result(L, m.host.SetEntityFields(id, vals...))
}

// luaEntityMove is spark.entity_move(id, x, y, z[, teleport]) → true | false, err.
func (m *Module) luaEntityMove(L *lua.LState) int {
	a := args{L: L, fn: "spark.entity_move"}
	id, _ := m.entityArg(a)
	var p [3]float32
	for i, name := range [3]string{"x", "y", "z"} {
		f := a.number(2+i, name)
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxFloat32 {
			a.fail(2+i, name, "a finite number")
		}
		p[i] = float32(f)
	}
	teleport := L.Get(5) != lua.LNil && L.Get(5) != lua.LFalse
	return result(L, m.host.SetEntityPosition(id, wire.Vec3{X: p[0], Y: p[1], Z: p[2]}, teleport))
}

// luaEntityDestroy is spark.entity_destroy(id) → true | false, err.
func (m *Module) luaEntityDestroy(L *lua.LState) int {
	a := args{L: L, fn: "spark.entity_destroy"}
	id, _ := m.entityArg(a)
	delete(m.entities, id)
	return result(L, m.host.DestroyEntity(id))
}

// luaEntityOwner is spark.entity_owner(id, client) → true | false, err.
func (m *Module) luaEntityOwner(L *lua.LState) int {
	a := args{L: L, fn: "spark.entity_owner"}
	id, _ := m.entityArg(a)
	return result(L, m.host.SetEntityOwner(id, uint32(a.integer(2, "client", 0, math.MaxUint32))))
}

// luaEntityParty is spark.entity_party(id, party) → true | false, err.
func (m *Module) luaEntityParty(L *lua.LState) int {
	a := args{L: L, fn: "spark.entity_party"}
	id, _ := m.entityArg(a)
	return result(L, m.host.SetEntityParty(id, uint32(a.integer(2, "party", 0, math.MaxUint32))))
}

// luaClientView is spark.client_view(client, {party = 0, spectator = false,
// focus = 0}) → true | false, err.
func (m *Module) luaClientView(L *lua.LState) int {
	const fn = "spark.client_view"
	a := args{L: L, fn: fn}
	client := a.client(1)
	f := fields{L: L, fn: fn, t: a.table(2, "view")}
	f.only("party", "spectator", "focus")
	var v module.ClientView
	if f.has("party") {
		v.Party = uint32(f.integer("party", 0, math.MaxUint32))
	}
	v.Spectator = f.boolean("spectator", false)
	if f.has("focus") {
		v.Focus = uint32(f.integer("focus", 0, math.MaxUint32))
	}
	return result(L, m.host.SetClientView(client, v))
}

// luaRaycast is spark.raycast(shooter, origin, dir, max_dist) → {entity, x,
// y, z, distance} on a hit | false on a miss | nil, err when refused.
func (m *Module) luaRaycast(L *lua.LState) int {
	a := args{L: L, fn: "spark.raycast"}
	shooter := a.client(1)
	origin, dir := vecArg(a, 2, "origin"), vecArg(a, 3, "dir")
	dist := a.number(4, "max_dist")
	if !(dist > 0) || dist > math.MaxFloat32 {
		a.fail(4, "max_dist", "a finite number > 0")
	}
	hit, err := m.host.Raycast(shooter, origin, dir, float32(dist))
	switch {
	case err != nil:
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Error()))
		return 2
	case hit.Entity == 0:
		L.Push(lua.LFalse)
		return 1
	}
	t := L.CreateTable(0, 5)
	t.RawSetString("entity", lua.LNumber(hit.Entity))
	t.RawSetString("x", lua.LNumber(hit.Point.X))
	t.RawSetString("y", lua.LNumber(hit.Point.Y))
	t.RawSetString("z", lua.LNumber(hit.Point.Z))
	t.RawSetString("distance", lua.LNumber(hit.Distance))
	L.Push(t)
	return 1
}

// luaOnInput is spark.on_input(fn(client, input)). Calling it at the top
// level subscribes the module to ClientInput; later it may only replace or
// remove the handler.
func (m *Module) luaOnInput(L *lua.LState) int {
	a := args{L: L, fn: "spark.on_input"}
	f := a.optFunction(1, "fn")
	if m.phase == phaseLoading {
		m.manifest.Inputs = true
	} else if !m.manifest.Inputs && f != nil {
		L.RaiseError("spark.on_input: the module did not subscribe to inputs; call spark.on_input at the top level of the file")
	}
	m.inputHook = f
	return 0
}

// inputTable is the Lua view of a ClientInput.
func inputTable(L *lua.LState, in *gamemsg.ClientInput) *lua.LTable {
	t := L.CreateTable(0, 13)
	t.RawSetString("seq", lua.LNumber(in.InputSeq))
	t.RawSetString("forward", lua.LNumber(in.MoveForward))
	t.RawSetString("right", lua.LNumber(in.MoveRight))
	t.RawSetString("yaw", lua.LNumber(in.LookYaw))
	t.RawSetString("pitch", lua.LNumber(in.LookPitch))
	t.RawSetString("buttons", lua.LNumber(in.Buttons))
	t.RawSetString("jump", lua.LBool(in.Buttons&gamemsg.ButtonJump != 0))
	t.RawSetString("fire", lua.LBool(in.Buttons&gamemsg.ButtonFire != 0))
	t.RawSetString("reload", lua.LBool(in.Buttons&gamemsg.ButtonReload != 0))
	t.RawSetString("sprint", lua.LBool(in.Buttons&gamemsg.ButtonSprint != 0))
	t.RawSetString("crouch", lua.LBool(in.Buttons&gamemsg.ButtonCrouch != 0))
	t.RawSetString("dt", lua.LNumber(in.DT))
	t.RawSetString("client_time", lua.LNumber(in.ClientTime))
	return t
}

// luaInputAck is spark.input_ack(client, {seq = N, position = {x=, y=, z=},
// velocity = {...}, yaw = 0, pitch = 0, grounded = false, crouching =
// false, sprinting = false}) → true | false, err.
func (m *Module) luaInputAck(L *lua.LState) int {
	const fn = "spark.input_ack"
	a := args{L: L, fn: fn}
	client := a.client(1)
	f := fields{L: L, fn: fn, t: a.table(2, "ack")}
	f.only("seq", "position", "velocity", "yaw", "pitch", "grounded", "crouching", "sprinting")
	ack := gamemsg.InputAck{LastInputSeq: uint32(f.integer("seq", 0, math.MaxUint32))}
	if f.has("position") {
		ack.Position = vecField(f, "position")
	}
	if f.has("velocity") {
		ack.Velocity = vecField(f, "velocity")
	}
	for _, c := range []struct {
		name string
		dst  *float32
	}{{"yaw", &ack.Yaw}, {"pitch", &ack.Pitch}} {
		if !f.has(c.name) {
			continue
		}
		n, ok := f.t.RawGetString(c.name).(lua.LNumber)
		if !ok || math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) || math.Abs(float64(n)) > math.MaxFloat32 {
			f.fail(c.name, "a finite number")
		}
		*c.dst = float32(n)
	}
	for bit, name := range []string{"grounded", "crouching", "sprinting"} {
		if f.boolean(name, false) {
			ack.Flags |= 1 << bit
		}
	}
	p := gamemsg.AppendInputAck(nil, &ack)
	return result(L, m.hostCall(func() error { return m.host.Send(client, gamemsg.TypeInputAck, p) }))
}
