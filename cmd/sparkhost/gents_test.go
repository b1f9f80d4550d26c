package main

import (
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
