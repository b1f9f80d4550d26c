package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/gateway"
)

func TestMMOWorldKeyCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "world.key")
	var out, errb bytes.Buffer
	if code := mmoCommand([]string{"world-key", path}, &out, &errb); code != 0 || !strings.Contains(out.String(), "ed25519:") {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if _, err := gateway.LoadWorldKey(path); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := mmoCommand([]string{"world-key", path}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "exists") {
		t.Fatalf("second run: exit %d: %s", code, errb.String())
	}
	if code := mmoCommand(nil, &out, &errb); code != 2 {
		t.Fatalf("no arguments: exit %d", code)
	}
}
