package tsgen

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestGenerateHello(t *testing.T) {
	in, err := os.ReadFile("testdata/hello.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	code := string(out)
	for _, want := range []string{
		`import { Channel, Direction, Kind, MessageSchema, NO_STRING_FIELD, Reader, WireError, Writer } from "./sparkhost";`,
		"  requiresAdmitted: true,\n  fields: [\n    { name: \"name\", kind: Kind.Str, max: 32 },\n  ],\n};",
		"export const HELLO_GREET_ID = 1000;",
		"export const HELLO_REPLY_ID = 1001;",
		"export interface HelloGreet {\n  /** str ≤ 32 bytes */\n  name: string;\n}",
		`at("hello_greet.name", () => w.str(m.name, 32));`,
		`const f_text = at("hello_reply.text", () => r.str(128));`,
		"  minLen: 2,\n  maxLen: 130,\n  stringOffset: 0,\n  requiresAdmitted: true,",
		"export function sendHelloGreet(c: Sender, m: HelloGreet): void {\n  c.send(HELLO_GREET_ID, Channel.Reliable, encodeHelloGreet(m));",
		"export const SCHEMAS: MessageSchema[] = [HelloGreetSchema, HelloReplySchema];",
		`case HELLO_REPLY_ID:` + "\n" + `      return { type: HELLO_REPLY_ID, name: "hello_reply", message: decodeHelloReply(payload) };`,
	} {
		if !strings.Contains(code, want) {
			t.Errorf("generated code lacks\n%s", want)
		}
	}
	if strings.Contains(code, "sendHelloReply") {
		t.Error("a send helper for a server-to-client message")
	}
	again, _ := Generate(in)
	if !bytes.Equal(out, again) {
		t.Error("generation is not deterministic")
	}
	custom, err := GenerateWith(in, Options{RuntimeImport: "../src/index"})
	if err != nil || !strings.Contains(string(custom), `from "../src/index";`) {
		t.Errorf("RuntimeImport not used: %v", err)
	}
}

func TestGenerateRefusesBadExports(t *testing.T) {
	msg := func(extra string) string {
		return `{"format":"sparkhost-schemas/1","messages":[{"id":1000,"name":"a_b","owner":"m","direction":"c2s","channel":"reliable","min_len":0,"max_len":100,"requires_admitted":true` + extra + `}]}`
	}
	cases := []struct{ name, in, want string }{
		{"not JSON", `{`, "schema export"},
		{"no format", `{"messages":[]}`, `no "format"`},
		{"other format", `{"format":"sparkhost-schemas/2","messages":[]}`, `format "sparkhost-schemas/2"`},
		{"unknown key", `{"format":"sparkhost-schemas/1","messages":[],"extra":1}`, `unknown field "extra"`},
		{"trailing data", `{"format":"sparkhost-schemas/1","messages":[]} {}`, "data after"},
		{"id below 1000", strings.Replace(msg(""), `"id":1000`, `"id":999`, 1), "id 999"},
		{"no id", strings.Replace(msg(""), `"id":1000,`, ``, 1), "no id"},
		{"bad name", strings.Replace(msg(""), `"a_b"`, `"a-b"`, 1), `name "a-b"`},
		{"empty owner", strings.Replace(msg(""), `"owner":"m"`, `"owner":""`, 1), "owner"},
		{"bad direction", strings.Replace(msg(""), `"c2s"`, `"up"`, 1), `direction "up"`},
		{"bad channel", strings.Replace(msg(""), `"reliable"`, `"ordered"`, 1), `channel "ordered"`},
		{"min above max", strings.Replace(msg(""), `"min_len":0`, `"min_len":200`, 1), "lengths 200..100"},
		{"max above payload", strings.Replace(msg(""), `"max_len":100`, `"max_len":70000`, 1), "65453"},
		{"no requires_admitted", strings.Replace(msg(""), `,"requires_admitted":true`, ``, 1), "requires_admitted"},
		{"string offset past max", msg(`,"string_offset":99`), "string_offset 99"},
		{"unknown type", msg(`,"fields":[{"name":"x","type":"u64"}]`), `unknown type "u64"`},
		{"str without max", msg(`,"fields":[{"name":"x","type":"str"}]`), "str needs max"},
		{"max on a scalar", msg(`,"fields":[{"name":"x","type":"u8","max":3}]`), "u8 takes no max"},
		{"bad field name", msg(`,"fields":[{"name":"x y","type":"u8"}]`), `field name "x y"`},
		{"field twice", msg(`,"fields":[{"name":"x","type":"u8"},{"name":"x","type":"u8"}]`), `field "x" appears twice`},
		{"array without of", msg(`,"fields":[{"name":"x","type":"array","max_count":2}]`), `needs "of"`},
		{"array without max_count", msg(`,"fields":[{"name":"x","type":"array","of":{"type":"u8"}}]`), "max_count"},
		{"array of arrays", msg(`,"fields":[{"name":"x","type":"array","of":{"type":"array"},"max_count":2}]`), "arrays of arrays"},
		{"element str without max", msg(`,"fields":[{"name":"x","type":"array","of":{"type":"str"},"max_count":2}]`), "element: str needs max"},
		{"of on a scalar", msg(`,"fields":[{"name":"x","type":"u8","of":{"type":"u8"}}]`), "belong to arrays"},
		{"fields above max_len", msg(`,"fields":[{"name":"p0","type":"vec3"},{"name":"p1","type":"vec3"},{"name":"p2","type":"vec3"},{"name":"p3","type":"vec3"},{"name":"p4","type":"vec3"},{"name":"p5","type":"vec3"},{"name":"p6","type":"vec3"},{"name":"p7","type":"vec3"},{"name":"p8","type":"vec3"}]`), "fields take 108..108 bytes"},
		{"sizes not the derived ones", strings.Replace(msg(`,"fields":[{"name":"x","type":"array","of":{"type":"u8"},"max_count":2}]`), `"min_len":0`, `"min_len":50`, 1), "min_len..max_len is 50..100"},
		{"typed with derived sizes but a string_offset", typed(`"min_len":2,"max_len":6,"string_offset":0`, `{"name":"x","type":"bytes","max":4}`), "string_offset must be absent"},
		{"typed without its string_offset", typed(`"min_len":3,"max_len":7`, `{"name":"a","type":"u8"},{"name":"x","type":"str","max":4}`), "string_offset must be 1"},
		{"str after a variable field", typed(`"min_len":4,"max_len":12,"string_offset":2`, `{"name":"b","type":"bytes","max":4},{"name":"x","type":"str","max":4}`), "string_offset must be absent"},
		{"no fields", typed(`"min_len":0,"max_len":0`, ``), "0 fields"},
		{"33 fields", typed(`"min_len":33,"max_len":33`, manyU8(33)), "33 fields"},
		{"field name of 33 bytes", typed(`"min_len":1,"max_len":1`, `{"name":"`+strings.Repeat("f", 33)+`","type":"u8"}`), "at most 32 bytes"},
		{"str max 65536", typed(`"min_len":2,"max_len":65453`, `{"name":"x","type":"bytes","max":65536}`), "bytes needs max 1..65535"},
		{"fields above MAX_PAYLOAD", typed(`"min_len":4,"max_len":65453`, `{"name":"x","type":"bytes","max":65000},{"name":"y","type":"bytes","max":1000}`), "above 65453"},
		{"owner builtin", strings.Replace(msg(""), `"owner":"m"`, `"owner":"builtin"`, 1), "owner"},
		{"owner blank", strings.Replace(msg(""), `"owner":"m"`, `"owner":"\u00a0 "`, 1), "owner"},
		{"duplicate id", `{"format":"sparkhost-schemas/1","messages":[` +
			`{"id":1000,"name":"a","owner":"m","direction":"c2s","channel":"reliable","min_len":0,"max_len":1,"requires_admitted":true},` +
			`{"id":1000,"name":"b","owner":"m","direction":"c2s","channel":"reliable","min_len":0,"max_len":1,"requires_admitted":true}]}`, `id 1000 is also "a"`},
		{"colliding identifiers", `{"format":"sparkhost-schemas/1","messages":[` +
			`{"id":1000,"name":"a_b","owner":"m","direction":"c2s","channel":"reliable","min_len":0,"max_len":1,"requires_admitted":true},` +
			`{"id":1001,"name":"aB","owner":"m","direction":"c2s","channel":"reliable","min_len":0,"max_len":1,"requires_admitted":true}]}`, "collides"},
		{"runtime name", strings.Replace(msg(""), `"a_b"`, `"reader"`, 1), "Reader collides"},
	}
	for _, c := range cases {
		_, err := Generate([]byte(c.in))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.want)
		}
	}
}

// typed is an export of one typed message with the given sizes and fields.
func typed(sizes, fields string) string {
	return `{"format":"sparkhost-schemas/1","messages":[{"id":1000,"name":"t","owner":"m","direction":"c2s","channel":"reliable",` +
		sizes + `,"requires_admitted":true,"fields":[` + fields + `]}]}`
}

func manyU8(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, fmt.Sprintf(`{"name":"f%d","type":"u8"}`, i))
	}
	return strings.Join(parts, ",")
}

// TestGenerateAcceptsWhatTheServerDerives: every kind with the sizes the
// registry derives is accepted, and 32 fields (the most) too.
func TestGenerateAcceptsWhatTheServerDerives(t *testing.T) {
	for name, in := range map[string]string{
		"alltypes":  mustRead(t, "testdata/alltypes.json"),
		"32 fields": typed(`"min_len":32,"max_len":32`, manyU8(32)),
		"str first": typed(`"min_len":3,"max_len":7,"string_offset":1`, `{"name":"a","type":"u8"},{"name":"x","type":"str","max":4}`),
	} {
		if _, err := Generate([]byte(in)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGenerateEmptyExport(t *testing.T) {
	out, err := Generate([]byte(`{"format":"sparkhost-schemas/1","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "export type Decoded = never;") || !strings.Contains(string(out), "export const SCHEMAS: MessageSchema[] = [];") {
		t.Errorf("empty export:\n%s", out)
	}
}
