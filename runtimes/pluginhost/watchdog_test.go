package pluginhost_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/internal/pluginwire"
)

// TestPluginExitsWithItsParent: a plugin whose parent dies without killing
// it (no Pdeathsig here: a shell starts it in the background and exits a
// second later, once the plugin has started) notices that it was reparented
// and exits on its own.
func TestPluginExitsWithItsParent(t *testing.T) {
	bin := testplugin.Build(t, "./examples/greeter")
	cmd := exec.Command("sh", "-c", `"$0" >/dev/null 2>&1 & echo $!; sleep 1`, bin)
	cmd.Env = append(os.Environ(), pluginwire.CookieKey+"="+pluginwire.CookieValue)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("pid %q: %v", out, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return
		}
	}
	t.Fatalf("plugin %d still runs 10 s after its parent exited", pid)
}
