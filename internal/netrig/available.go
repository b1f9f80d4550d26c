package netrig

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// RequireEnv, when set to 1 (CI sets it), turns "the rig cannot run here"
// from a skip into a failure, so that a CI run cannot pass without running
// the rig's tests.
const RequireEnv = "SPARK_REQUIRE_NETRIG"

var (
	availOnce sync.Once
	availErr  error
)

// Available says why the rig cannot run on this machine, or nil: it needs
// Linux, CAP_NET_ADMIN and CAP_SYS_ADMIN (root), the ip, nft, tc and
// conntrack commands, /dev/net/tun, and `ip netns add` to work (it tries).
// The answer is computed once.
func Available() error {
	availOnce.Do(func() { availErr = available() })
	return availErr
}

// tools are the commands the rig runs and the Debian packages that have them.
var tools = []struct{ cmd, pkg string }{
	{"ip", "iproute2"}, {"tc", "iproute2"}, {"nft", "nftables"}, {"conntrack", "conntrack"},
}

func available() error {
	if runtime.GOOS != "linux" {
		return errors.New("network namespaces are Linux only")
	}
	if err := haveCaps(); err != nil {
		return err
	}
	var missing []string
	for _, t := range tools {
		if _, err := exec.LookPath(t.cmd); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", t.cmd, t.pkg))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("no TUN device: %w", err)
	}
	own, err := owner()
	if err != nil {
		return err
	}
	probe := nsPrefix + own + "-probe"
	if err := addNamespace(probe); err != nil {
		return fmt.Errorf("cannot make a network namespace: %w", err)
	}
	return deleteNamespace(probe)
}

// haveCaps checks the effective capabilities: CAP_NET_ADMIN (12) for links,
// routes and the firewall, CAP_SYS_ADMIN (21) for setns and `ip netns add`.
func haveCaps() error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		hex, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return fmt.Errorf("reading CapEff: %w", err)
		}
		if caps&(1<<12) == 0 || caps&(1<<21) == 0 {
			return errors.New("not root (needs CAP_NET_ADMIN and CAP_SYS_ADMIN)")
		}
		return nil
	}
	return errors.New("no CapEff in /proc/self/status")
}

// New builds a rig for a test and removes it when the test ends. Where the
// rig cannot run it skips the test with the reason, or fails it when
// RequireEnv is 1. The rig logs to the test's log.
func New(t testing.TB, cfg Config) *Rig {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("netrig: the network rig cannot run and %s=1: %v", RequireEnv, err)
		}
		t.Skipf("netrig: skipped, the network rig cannot run here: %v (set %s=1 to make this a failure)", err, RequireEnv)
	}
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	r, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("netrig: teardown: %v", err)
		}
	})
	return r
}
