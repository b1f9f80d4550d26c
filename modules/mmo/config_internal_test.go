package mmo

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoginLimitsConfig: the per-account budget of strangers and the trust
// of an owner's address are configured and checked; the retired lockout
// keys still load, and are reported.
func TestLoginLimitsConfig(t *testing.T) {
	dir := t.TempDir()
	load := func(body string) (Config, error) {
		if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return LoadConfig(dir)
	}
	c, err := load("account_attempts = 5\naccount_window = 120\ntrusted_for = 86400\n")
	if err != nil || c.AccountAttempts != 5 || c.AccountWindow != 120 || c.TrustedFor != 86400 || len(c.Retired()) != 0 {
		t.Fatalf("%+v %v", c, err)
	}
	d := DefaultConfig()
	if d.AccountAttempts != 10 || d.AccountWindow != 60 || d.TrustedFor != 30*86400 {
		t.Fatalf("defaults %d %v %v", d.AccountAttempts, d.AccountWindow, d.TrustedFor)
	}
	for body, want := range map[string]string{
		"account_attempts = 0\n":    "account_attempts = 0: must be 1..1000",
		"account_attempts = 1001\n": "account_attempts = 1001: must be 1..1000",
		"account_window = 0\n":      "account_window = 0: must be above 0",
		"trusted_for = -1\n":        "trusted_for = -1: must be above 0",
	} {
		if _, err := load(body); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	c, err = load("max_login_failures = 50\nlockout = 30\n")
	if err != nil || !slices.Equal(c.Retired(), []string{"max_login_failures", "lockout"}) {
		t.Fatalf("retired keys: %v %v", c.Retired(), err)
	}
}

func TestThrottleSource(t *testing.T) {
	for addr, want := range map[string]string{
		"10.1.2.3":           "10.1.2.3",
		"::ffff:10.1.2.3":    "10.1.2.3",
		"2001:db8:1:2::1":    "2001:db8:1:2::/64",
		"2001:db8:1:2:ff::9": "2001:db8:1:2::/64",
	} {
		if got := throttleSource(netip.MustParseAddr(addr)); got != want {
			t.Errorf("throttleSource(%s) = %s, want %s", addr, got, want)
		}
	}
}
