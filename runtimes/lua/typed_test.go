package lua

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

func TestHelloDeclaresTypedFields(t *testing.T) {
	hs := load(t, "../../scripts/hello.lua", Config{})
	greet, reply := hs.man.Messages[0], hs.man.Messages[1]
	if !reflect.DeepEqual(greet.Fields, []wire.Field{{Name: "name", Kind: wire.KindStr, Max: 32}}) ||
		greet.MinLen != 2 || greet.MaxLen != 34 || greet.StringFieldOffset != 0 {
		t.Fatalf("hello_greet %+v", greet)
	}
	if !reflect.DeepEqual(reply.Fields, []wire.Field{{Name: "text", Kind: wire.KindStr, Max: 128}}) || reply.MaxLen != 130 {
		t.Fatalf("hello_reply %+v", reply)
	}
}

func TestTypedDeclarationForms(t *testing.T) {
	src := `spark.module{name = "typed"}
spark.message{id = 1000, name = "all", direction = "both", channel = "reliable", fields = {
  {"a", "u8"}, {"b", "u16"}, {"c", "u32"}, {"d", "i32"}, {"e", "f32"}, {"p", "vec3"},
  {"s", "str", 10}, {"raw", "bytes", 4}, {"ids", "array", 3, "u16"}, {"tags", "array", 2, "str", 5},
}, max = 27 + 12 + 6 + 8 + 16}`
	hs := load(t, writeScript(t, "typed.lua", src), Config{})
	want := []wire.Field{
		{Name: "a", Kind: wire.KindU8}, {Name: "b", Kind: wire.KindU16}, {Name: "c", Kind: wire.KindU32},
		{Name: "d", Kind: wire.KindI32}, {Name: "e", Kind: wire.KindF32}, {Name: "p", Kind: wire.KindVec3},
		{Name: "s", Kind: wire.KindStr, Max: 10}, {Name: "raw", Kind: wire.KindBytes, Max: 4},
		{Name: "ids", Kind: wire.KindArray, Max: 3, Elem: wire.KindU16},
		{Name: "tags", Kind: wire.KindArray, Max: 2, Elem: wire.KindStr, ElemMax: 5},
	}
	if got := hs.man.Messages[0]; !reflect.DeepEqual(got.Fields, want) || got.MinLen != 35 || got.StringFieldOffset != 27 {
		t.Fatalf("declared %+v", got)
	}
}

func TestTypedDeclarationErrors(t *testing.T) {
	const head = `spark.module{name = "bad", version = "1"}` + "\n" +
		`spark.message{id = 1000, name = "x", direction = "c2s", channel = "reliable", `
	cases := []struct{ name, fields, want string }{
		{"not a list", `fields = "str"`, `field 'fields' must be a list of fields`},
		{"empty", `fields = {}`, `field 'fields' must be a list of fields`},
		{"bad name", `fields = {{"1a", "u8"}}`, "fields[1]: entry 1 (name) must be an identifier"},
		{"bad type", `fields = {{"a", "string", 3}}`, `fields[1]: entry 2 (type) must be "u8"`},
		{"str without max", `fields = {{"a", "str"}}`, "fields[1]: entry 3 (max bytes) must be an integer 1..65535, got nil"},
		{"u8 with max", `fields = {{"a", "u8", 3}}`, "fields[1]: a u8 takes no max"},
		{"nested array", `fields = {{"a", "array", 3, "array"}}`, "entry 4 (type) must be"},
		{"duplicate", `fields = {{"a", "u8"}, {"a", "u16"}}`, `name "a" is used twice`},
		{"max disagrees", `fields = {{"a", "u8"}}, max = 4`, "max_len 4 differs from the 1 bytes"},
		{"too big", `fields = {{"a", "array", 1000, "str", 1000}}`, "above MAX_PAYLOAD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tryLoad(t, writeScript(t, "bad.lua", head+c.fields+"}"), Config{}, newTestHost())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load error = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// A typed message's send is checked against its fields, not only its sizes.
func TestTypedSendChecksFields(t *testing.T) {
	src := `spark.module{name = "typed"}
local T = spark.message{id = 1000, name = "t", direction = "s2c", channel = "reliable", fields = {{"s", "str", 8}}}
spark.on_admitted(function(id) spark.send(id, T, spark.writer():u8(1):u8(0):u8(0)) end)`
	hs := load(t, writeScript(t, "typed.lua", src), Config{})
	f := oneFault(t, hs.step(module.Event{Kind: module.EventAdmitted, Client: 1, Name: "a"}), ErrScript)
	if !strings.Contains(f.Message, "does not match the fields of message 1000") {
		t.Fatalf("fault %v", f)
	}
}
