// Package testplugin builds Go plugin binaries for tests: real programs,
// built with the go command from packages in this repository, run by the
// real plugin host.
package testplugin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	dir   string
	built = map[string]string{}
)

// Build builds the package (an import path inside this module, e.g.
// "./examples/greeter" relative to the module root) once per test process
// and returns the binary's path. ldflags are passed to the linker.
func Build(tb testing.TB, pkg string, ldflags ...string) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := pkg + "\x00" + strings.Join(ldflags, " ")
	if p, ok := built[key]; ok {
		return p
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "sparkhost-plugins-")
		if err != nil {
			tb.Fatal(err)
		}
		dir = d
	}
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256([]byte(key))
	out := filepath.Join(dir, filepath.Base(pkg)+"-"+hex.EncodeToString(sum[:4]))
	args := []string{"build", "-o", out}
	if len(ldflags) > 0 {
		args = append(args, "-ldflags", strings.Join(ldflags, " "))
	}
	cmd := exec.Command(goTool(), append(args, pkg)...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	built[key] = out
	return out
}

// Cleanup removes the built binaries; call it from TestMain after m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
		clear(built)
	}
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		d = parent
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
