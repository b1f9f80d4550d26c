package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenTSCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "hello.ts")
	if code := genTSCommand([]string{"--runtime", "../src/index", "-o", out, "../../clients/typescript/tsgen/testdata/hello.json"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), `from "../src/index";`) || !strings.Contains(string(b), "HELLO_GREET_ID = 1000") {
		t.Fatalf("generated file: %v\n%s", err, b)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"format":"other"}`), 0o644)
	if code := genTSCommand([]string{bad}); code != 1 {
		t.Errorf("bad export: exit %d, want 1", code)
	}
	if code := genTSCommand([]string{"a", "b"}); code != 2 {
		t.Errorf("two files: exit %d, want 2", code)
	}
}

// TestSchemaGenTSAlias: `sparkhost schema gen-ts` is gen-ts, standard input
// and output included.
func TestSchemaGenTSAlias(t *testing.T) {
	in, err := os.ReadFile("../../clients/typescript/tsgen/testdata/hello.json")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := genTSMain([]string{"--runtime", "./rt"}, bytes.NewReader(in), &out, &errb); code != 0 {
		t.Fatalf("gen-ts from stdin: exit %d: %s", code, errb.String())
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "hello.ts")
	var out2 bytes.Buffer
	if code := schemaMain([]string{"gen-ts", "--runtime", "./rt", "-o", file, "../../clients/typescript/tsgen/testdata/hello.json"}, &out2, &errb); code != 0 {
		t.Fatalf("schema gen-ts: exit %d: %s", code, errb.String())
	}
	b, _ := os.ReadFile(file)
	if !bytes.Equal(b, out.Bytes()) || !strings.Contains(string(b), `from "./rt";`) {
		t.Errorf("schema gen-ts wrote other code than gen-ts")
	}
	errb.Reset()
	if code := schemaMain([]string{"gen-ts", "--help"}, &out2, &errb); code != 0 || !strings.Contains(errb.String(), "sparkhost schema gen-ts") {
		t.Errorf("schema gen-ts --help: exit %d %q", code, errb.String())
	}
	if code := schemaMain([]string{"help"}, &out2, &errb); code != 0 || !strings.Contains(out2.String(), "schema gen-ts") {
		t.Errorf("schema help does not list gen-ts")
	}
}
