package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginInitBuildsOutsideTheRepository: `sparkhost plugin init` makes a
// plugin module in a directory outside this repository; it builds offline
// (the module cache only) against the checkout, passes gofmt and vet, loads
// into a real server and answers a player of the stock console.
func TestPluginInitBuildsOutsideTheRepository(t *testing.T) {
	bin := buildBinary(t)
	sdk, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(shortTempDir(t), "pingpong")
	code, out, errs := runBinary(t, bin, "plugin", "init", dir, "--sdk", sdk)
	if code != 0 || !strings.Contains(out, "created plugin pingpong in "+dir) {
		t.Fatalf("plugin init: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runBinary(t, bin, "plugin", "init", dir, "--sdk", sdk); code != 1 || !strings.Contains(errs, "is not empty") {
		t.Errorf("init into a non-empty directory: exit %d, %s", code, errs)
	}
	offline := append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=-mod=readonly")
	for _, args := range [][]string{{"build", "-o", "pingpong", "."}, {"vet", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, offline
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the new module: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command("gofmt", "-l", dir).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("gofmt -l: %s %v", out, err)
	}

	rs := startServer(t, bin, filepath.Join(shortTempDir(t), "data"), "--module", filepath.Join(dir, "pingpong"))
	// The stock console knows nothing of pingpong: it sends and prints the
	// messages from the fields the scaffold declares.
	tmp := shortTempDir(t)
	c := startClient(t, bin, filepath.Join(tmp, "c"), rs.pin,
		`connect `+rs.addr.String()+` alice; send Ping text="hi"; wait 'recv Pong line="hello alice: hi"' 20s; quit`)
	c.waitExit(t, "client")
	if hexRecv.MatchString(c.output()) {
		t.Errorf("a pingpong message printed as hex:\n%s", c.output())
	}
}
