package tsgen

import (
	"bytes"
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
		`import { Channel, Direction, MessageSchema, NO_STRING_FIELD, Reader, WireError, Writer } from "./sparkhost";`,
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
		{"fields below min_len", strings.Replace(msg(`,"fields":[{"name":"x","type":"array","of":{"type":"u8"},"max_count":2}]`), `"min_len":0`, `"min_len":50`, 1), "no payload fits"},
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

func TestGenerateEmptyExport(t *testing.T) {
	out, err := Generate([]byte(`{"format":"sparkhost-schemas/1","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "export type Decoded = never;") || !strings.Contains(string(out), "export const SCHEMAS: MessageSchema[] = [];") {
		t.Errorf("empty export:\n%s", out)
	}
}
