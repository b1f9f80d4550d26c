package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/module/schemajson"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// helloSchemas is what scripts/hello.lua declares.
var helloSchemas = []wire.ModuleSchema{
	{Owner: "hello", Schema: wire.Schema{ID: 1000, Name: "hello_greet", Direction: wire.ClientToServer, Channel: wire.Reliable,
		MinLen: 2, MaxLen: 34, StringFieldOffset: 0, RequiresAdmitted: true, Fields: []wire.Field{{Name: "name", Kind: wire.KindStr, Max: 32}}}},
	{Owner: "hello", Schema: wire.Schema{ID: 1001, Name: "hello_reply", Direction: wire.ServerToClient, Channel: wire.Reliable,
		MinLen: 2, MaxLen: 130, StringFieldOffset: 0, RequiresAdmitted: true, Fields: []wire.Field{{Name: "text", Kind: wire.KindStr, Max: 128}}}},
}

// TestProcessesConsoleSpeaksHello: a real server running scripts/hello.lua
// and a real `sparkhost client` that lists the announced types, sends
// hello_greet from typed arguments (named, then positional with a space)
// and waits for the decoded hello_reply.
func TestProcessesConsoleSpeaksHello(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	hello, _ := filepath.Abs("../../scripts/hello.lua")
	rs := startServer(t, bin, filepath.Join(tmp, "data"), "--module", hello)
	addr := rs.addr.String()
	ann := startClient(t, bin, filepath.Join(tmp, "ann"), rs.pin, `connect `+addr+` ann; messages; `+
		`send hello_greet name=ann; wait 'recv hello_reply text="Hello, ann! You are greeting number 1\."' 30s; `+
		`send hello_greet "ann smith"; wait 'recv hello_reply text="Hello, ann smith! You are greeting number 2\."' 30s; quit`)
	ann.waitExit(t, "ann")
	out := ann.output()
	for _, want := range []string{
		"message 1000 hello_greet owner hello c2s reliable fields: name str(32)",
		"message 1001 hello_reply owner hello s2c reliable fields: text str(128)",
		"sent hello_greet (5 bytes)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no line %q in the console's output:\n%s", want, out)
		}
	}
}

// TestProcessesSchemaExport: `sparkhost schema export` from the module file
// and from the running server write the same document, which decodes to
// hello.lua's schemas and re-encodes to the same bytes.
func TestProcessesSchemaExport(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	hello, _ := filepath.Abs("../../scripts/hello.lua")
	outFile := filepath.Join(tmp, "schemas.json")
	if out, err := exec.Command(bin, "schema", "export", "--module", hello, "--out", outFile).CombinedOutput(); err != nil {
		t.Fatalf("schema export --module: %v\n%s", err, out)
	}
	fromFile, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	rs := startServer(t, bin, filepath.Join(tmp, "data"), "--module", hello)
	fromServer, err := exec.Command(bin, "schema", "export", "--server", rs.addr.String(), "--pin", rs.pin).Output()
	if err != nil {
		t.Fatalf("schema export --server: %v", err)
	}
	if !bytes.Equal(fromFile, fromServer) {
		t.Fatalf("exports differ:\n--module:\n%s\n--server:\n%s", fromFile, fromServer)
	}
	got, err := schemajson.DecodeBytes(fromServer)
	if err != nil || !reflect.DeepEqual(got, helloSchemas) {
		t.Fatalf("decoded %+v, %v\nwant %+v", got, err, helloSchemas)
	}
	var again bytes.Buffer
	if err := schemajson.Write(&again, got); err != nil || !bytes.Equal(again.Bytes(), fromServer) {
		t.Fatalf("re-encoded differs (%v):\n%s", err, again.String())
	}
	if !strings.Contains(string(fromServer), `"fields": [`) || !strings.Contains(string(fromServer), `"format": "sparkhost-schemas/1"`) {
		t.Fatalf("export:\n%s", fromServer)
	}
}

func TestSchemaExportUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := schemaMain([]string{"export"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--module FILE or --server") {
		t.Fatalf("no source: %d %q", code, errb.String())
	}
	if code := schemaMain([]string{"export", "--module", "/nonexistent/x.lua"}, &out, &errb); code != 1 {
		t.Fatalf("missing module: %d %q", code, errb.String())
	}
}
