package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// boomLua faults in on_tick for as many ticks as `boom N` asks.
const boomLua = `spark.module{name = "boom", version = "1"}
local left = 0
spark.command("boom", "N", "fault in the next N ticks", function(n) left = tonumber(n) return "ok" end)
spark.on_tick(function() if left > 0 then left = left - 1 error("boom") end end)
`

// TestLuaFaultsAfterReloadAndLoadByName: faults count again from zero after
// a successful `module reload`; a Lua module loaded by a path outside the
// scripts directory, failed for too many faults, comes back with
// `module load NAME`.
func TestLuaFaultsAfterReloadAndLoadByName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boom.lua")
	if err := os.WriteFile(path, []byte(boomLua), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _ := startHost(t, withModules(path))
	info := func() string { out, _ := srv.Exec("module info boom"); return out }
	if _, err := srv.Exec("boom 3"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "three faults", func() bool { return strings.Contains(info(), "\nfaults 3\n") })
	if _, err := srv.Exec("module reload boom"); err != nil {
		t.Fatal(err)
	}
	if out := info(); !strings.Contains(out, "\nfaults 0\n") || strings.Contains(out, "last error") {
		t.Fatalf("after a successful reload:\n%s", out)
	}
	if _, err := srv.Exec("boom 20"); err != nil { // past the limit of 10 a minute
		t.Fatal(err)
	}
	eventually(t, "the module to fail", func() bool { return strings.Contains(info(), "state failed") })
	out, err := srv.Exec("module load boom")
	if err != nil || out != "loaded boom" {
		t.Fatalf("module load boom after a load by path: %q %v", out, err)
	}
	if out := info(); !strings.Contains(out, "state running") || !strings.Contains(out, "source "+path) {
		t.Fatalf("after module load boom:\n%s", out)
	}
}
