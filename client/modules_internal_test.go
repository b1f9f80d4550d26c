package client

import (
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

var consoleType = wire.ModuleSchema{Owner: "m", Schema: wire.Schema{ID: 1000, Name: "t", Direction: wire.ClientToServer, Fields: []wire.Field{
	{Name: "name", Kind: wire.KindStr, Max: 16}, {Name: "hp", Kind: wire.KindU16}, {Name: "pos", Kind: wire.KindVec3},
	{Name: "ids", Kind: wire.KindArray, Elem: wire.KindU32, Max: 4}, {Name: "blob", Kind: wire.KindBytes, Max: 4},
}}}

func TestEncodeArgsNamedAndPositional(t *testing.T) {
	named, err := encodeArgs(&consoleType, []string{"hp=7", "name=ann smith", "pos=1,2.5,-3", "ids=1,2", "blob=0a0b"})
	if err != nil {
		t.Fatal(err)
	}
	positional, err := encodeArgs(&consoleType, []string{"ann smith", "7", "1,2.5,-3", "1,2", "0a0b"})
	if err != nil || string(named) != string(positional) {
		t.Fatalf("positional % x (%v), named % x", positional, err, named)
	}
	vals, err := wire.DecodeFields(consoleType.Fields, named)
	if err != nil {
		t.Fatal(err)
	}
	if got := valuesText(consoleType.Fields, vals); got != `name="ann smith" hp=7 pos=1,2.5,-3 ids=[1,2] blob=0a0b` {
		t.Fatalf("text %s", got)
	}
}

func TestEncodeArgsErrors(t *testing.T) {
	for args, want := range map[string]string{
		"ann 70000 0,0,0 1 00":           "not a u16",
		"ann 1 0,0 1 00":                 "not a vec3",
		"ann 1 0,0,0 1,2,3,4,5 00":       "5 elements, at most 4",
		"ann 1 0,0,0 1":                  "no value for field blob",
		"ann 1 0,0,0 1 00 extra":         "1 values more",
		"ann 1 0,0,0 1 zz":               "not hex",
		"name=a name=b 1 0,0,0 1 00":     "given twice",
		"ann 1 nan,0,0 1 00":             "not a finite number",
		"aaaaaaaaaaaaaaaaa 1 0,0,0 1 00": "17 bytes, at most 16",
	} {
		_, err := encodeArgs(&consoleType, strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", args, err, want)
		}
	}
}
