package schemajson

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The document of docs/schemas.md, byte for byte what Write produces.
const helloDoc = `{
  "format": "sparkhost-schemas/1",
  "messages": [
    {
      "id": 1000,
      "name": "hello_greet",
      "owner": "hello",
      "direction": "c2s",
      "channel": "reliable",
      "min_len": 2,
      "max_len": 34,
      "requires_admitted": true,
      "string_offset": 0,
      "fields": [
        {
          "name": "name",
          "type": "str",
          "max": 32
        }
      ]
    },
    {
      "id": 1002,
      "name": "state",
      "owner": "hello",
      "direction": "both",
      "channel": "reliable_ordered",
      "min_len": 20,
      "max_len": 220,
      "requires_admitted": false,
      "fields": [
        {
          "name": "hp",
          "type": "u16"
        },
        {
          "name": "pos",
          "type": "vec3"
        },
        {
          "name": "blob",
          "type": "bytes",
          "max": 64
        },
        {
          "name": "ids",
          "type": "array",
          "of": {
            "type": "u32"
          },
          "max_count": 16
        },
        {
          "name": "names",
          "type": "array",
          "of": {
            "type": "str",
            "max": 16
          },
          "max_count": 4
        }
      ]
    },
    {
      "id": 1003,
      "name": "raw",
      "owner": "other",
      "direction": "s2c",
      "channel": "unreliable",
      "min_len": 0,
      "max_len": 100,
      "requires_admitted": true
    }
  ]
}
`

func registrySchemas(t *testing.T) []wire.ModuleSchema {
	reg := wire.NewRegistry()
	for _, r := range []struct {
		owner string
		s     wire.Schema
	}{
		{"hello", wire.Schema{ID: 1000, Name: "hello_greet", Direction: wire.ClientToServer, Channel: wire.Reliable, RequiresAdmitted: true,
			Fields: []wire.Field{{Name: "name", Kind: wire.KindStr, Max: 32}}}},
		{"hello", wire.Schema{ID: 1002, Name: "state", Direction: wire.BothDirections, Channel: wire.ReliableOrdered, Fields: []wire.Field{
			{Name: "hp", Kind: wire.KindU16}, {Name: "pos", Kind: wire.KindVec3}, {Name: "blob", Kind: wire.KindBytes, Max: 64},
			{Name: "ids", Kind: wire.KindArray, Elem: wire.KindU32, Max: 16},
			{Name: "names", Kind: wire.KindArray, Elem: wire.KindStr, ElemMax: 16, Max: 4},
		}}},
		{"other", wire.Schema{ID: 1003, Name: "raw", Direction: wire.ServerToClient, Channel: wire.Unreliable, MaxLen: 100,
			StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true}},
	} {
		if err := reg.Register(r.owner, r.s); err != nil {
			t.Fatal(err)
		}
	}
	return reg.ModuleSchemas()
}

func TestWriteDecodeRoundTrip(t *testing.T) {
	want := registrySchemas(t)
	var b bytes.Buffer
	if err := Write(&b, want); err != nil {
		t.Fatal(err)
	}
	if b.String() != helloDoc {
		t.Fatalf("wrote\n%s\nwant\n%s", b.String(), helloDoc)
	}
	got, err := DecodeBytes(b.Bytes())
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v, %v\nwant %+v", got, err, want)
	}
}

func TestDecodeRefuses(t *testing.T) {
	cases := map[string]func(string) string{
		"format": func(s string) string { return strings.Replace(s, "sparkhost-schemas/1", "sparkhost-schemas/2", 1) },
		"unknown key": func(s string) string {
			return strings.Replace(s, `"owner": "other",`, `"owner": "other", "colour": 1,`, 1)
		},
		"type":          func(s string) string { return strings.Replace(s, `"type": "u16"`, `"type": "u64"`, 1) },
		"channel":       func(s string) string { return strings.Replace(s, `"reliable_ordered"`, `"ordered"`, 1) },
		"sizes":         func(s string) string { return strings.Replace(s, `"max_len": 34`, `"max_len": 35`, 1) },
		"string offset": func(s string) string { return strings.Replace(s, `"string_offset": 0,`, ``, 1) },
		"nested array":  func(s string) string { return strings.Replace(s, `"type": "u32"`, `"type": "array"`, 1) },
		"reserved id":   func(s string) string { return strings.Replace(s, `"id": 1003`, `"id": 999`, 1) },
		"trailing":      func(s string) string { return s + "{}" },
	}
	for name, mod := range cases {
		if _, err := DecodeBytes([]byte(mod(helloDoc))); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
}
