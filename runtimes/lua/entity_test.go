package lua

import (
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

const entityScript = `
spark.module{name = "ents"}
local PLAYER = spark.entity_type{id = 3, name = "player", position = "pos",
  box = {min = {x = -0.5, y = 0, z = -0.5}, max = {x = 0.5, y = 2, z = 0.5}},
  fields = {
    {name = "pos", kind = "vec3"},
    {name = "hp", kind = "int32"},
    {name = "ammo", kind = "uint32", visibility = "private"},
    {name = "alive", kind = "bool", visibility = "party"},
    {name = "aim", kind = "float", visibility = "spectator"},
  }}
local ents = {}
spark.on_admitted(function(id)
  local e, err = spark.entity_spawn{type = PLAYER, owner = id, position = {x = id, y = 0, z = 0},
    fields = {hp = 100, ammo = 30, alive = true}}
  assert(e, err)
  ents[id] = e
  assert(spark.client_view(id, {party = 1}))
end)
spark.on_left(function(id)
  assert(spark.entity_destroy(ents[id]))
  ents[id] = nil
end)
spark.on_input(function(id, input)
  local e = ents[id]
  assert(spark.entity_move(e, input.forward, 0, input.right))
  assert(spark.entity_set(e, {hp = input.seq}))
  assert(spark.input_ack(id, {seq = input.seq, position = {x = input.forward, z = input.right},
    yaw = input.yaw, grounded = true}))
  if input.fire then
    local hit, err = spark.raycast(id, {x = 5, y = 1, z = -5}, {x = 0, y = 0, z = 1}, 20)
    print("shot", hit and hit.entity or tostring(hit), err)
  end
end)
spark.command("bad", "", "", function(kind)
  if kind == "field" then spark.entity_set(ents[1], {nope = 1}) end
  if kind == "kind" then spark.entity_set(ents[1], {hp = "x"}) end
  if kind == "foreign" then spark.entity_move(12345, 0, 0, 0) end
  return "ok"
end)
`

func TestLuaEntities(t *testing.T) {
	hs := load(t, writeScript(t, "ents.lua", entityScript), Config{})
	if !hs.man.Inputs || len(hs.man.EntityTypes) != 1 || hs.man.EntityTypes[0].PositionField != "pos" ||
		len(hs.man.EntityTypes[0].Fields) != 5 || hs.man.EntityTypes[0].Fields[2].Visibility != gamemsg.VisibilityPrivate {
		t.Fatalf("manifest %+v", hs.man)
	}
	w := hs.h.world
	if err := w.SetTypes(hs.h.block, "ents", hs.man.EntityTypes); err != nil {
		t.Fatal(err)
	}
	w.AddClient(1, 0)
	w.AddClient(2, 0)
	if f := hs.step(module.Event{Kind: module.EventAdmitted, Client: 1}, module.Event{Kind: module.EventAdmitted, Client: 2}); len(f) > 0 {
		t.Fatal(f)
	}
	ids := w.Entities()
	if len(ids) != 2 {
		t.Fatalf("entities %v", ids)
	}
	if info, _ := w.Entity(ids[0]); info.Owner != 1 || info.Position.X != 1 {
		t.Fatalf("entity %+v", info)
	}
	vals, _ := w.Fields(ids[0])
	if vals[1].Int != 100 || vals[2].Uint != 30 || !vals[3].Bool {
		t.Fatalf("fields %+v", vals)
	}
	hs.h.takeSends()
	in := gamemsg.ClientInput{InputSeq: 7, MoveForward: 0.5, MoveRight: -1, DT: 0.016, Buttons: gamemsg.ButtonFire}
	w.Tick(0)
	w.Tick(50_000_000)
	if f := hs.step(module.Event{Kind: module.EventInput, Client: 2, Input: in}); len(f) > 0 {
		t.Fatal(f)
	}
	if info, _ := w.Entity(ids[1]); info.Position != (wire.Vec3{X: 0.5, Z: -1}) {
		t.Fatalf("moved to %+v", info.Position)
	}
	if vals, _ := w.Fields(ids[1]); vals[1].Int != 7 || vals[0].Vec != (wire.Vec3{X: 0.5, Z: -1}) {
		t.Fatalf("fields %+v", vals)
	}
	var ack *sent
	for _, s := range hs.h.takeSends() {
		if s.Type == gamemsg.TypeInputAck {
			ack = &s
		}
	}
	if ack == nil || ack.Client != 2 {
		t.Fatal("no InputAck")
	}
	if a, err := gamemsg.ParseInputAck(ack.Payload); err != nil || a.LastInputSeq != 7 || a.Position.Z != -1 || a.Flags != gamemsg.FlagGrounded {
		t.Fatalf("InputAck %+v %v", a, err)
	}
	if !strings.Contains(hs.h.logText(), "shot false") {
		t.Fatalf("raycast from far away should miss: %s", hs.h.logText())
	}
	for _, kind := range []string{"field", "kind", "foreign"} {
		if _, err := hs.m.Command("bad", []string{kind}); err == nil {
			t.Errorf("bad %s: no error", kind)
		}
	}
	if f := hs.step(module.Event{Kind: module.EventLeft, Client: 1}); len(f) > 0 {
		t.Fatal(f)
	}
	if got := w.Entities(); len(got) != 1 || got[0] != ids[1] {
		t.Fatalf("after client 1 left: %v", got)
	}
}

func TestLuaEntityDeclarationErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`spark.entity_type{id = 1, name = "x", fields = {{name = "a", kind = "str"}}}`, "field 'kind'"},
		{`spark.entity_type{id = 1, name = "x", fields = {{name = "a", kind = "bool"}, {name = "a", kind = "bool"}}}`, "declared twice"},
		{`spark.entity_type{id = 1, name = "x", position = "a", fields = {{name = "a", kind = "bool"}}}`, "field 'position'"},
		{`spark.entity_type{id = 1, name = "x"} spark.entity_type{id = 1, name = "y"}`, "already declared"},
		{`spark.entity_spawn{type = 1}`, "once the module has loaded"},
		{`spark.entity_type{id = 1, name = "x", box = {min = {x = 1}, max = {x = 0}}}`, "min must be"},
	} {
		_, err := tryLoad(t, writeScript(t, "bad.lua", `spark.module{name = "bad"} `+c.src), Config{}, newTestHost())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.src, err, c.want)
		}
	}
	// on_input after load without subscribing is refused.
	hs := load(t, writeScript(t, "late.lua", `spark.module{name = "late"}
spark.command("sub", "", "", function() spark.on_input(function() end) end)`), Config{})
	if _, err := hs.m.Command("sub", nil); err == nil || !strings.Contains(err.Error(), "top level") {
		t.Fatalf("late on_input: %v", err)
	}
}
