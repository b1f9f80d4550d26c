package mmo_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/modules/mmo"
	"github.com/sparkhost/sparkhost/modules/mmo/internal/pgtest"
	"github.com/sparkhost/sparkhost/netstack"
)

// TestModuleWithoutDatabasePasswordIsFailed: the database needs a
// password and the environment variable that [database] password_env
// names is not set. The module (a real plugin process, served as the
// server serves it) does not start: check says so naming the file, the
// line and the key; a running server lists it failed, /readyz is 503 with
// the cause, and a player's request is refused at once.
func TestModuleWithoutDatabasePasswordIsFailed(t *testing.T) {
	c := pgtest.Need(t)
	db, err := c.CreateDB(context.Background())
	must(t, err)
	dataDir := t.TempDir()
	mdir := filepath.Join(dataDir, "modules", "mmo")
	must(t, os.MkdirAll(mdir, 0o700))
	const unset = "SPARK_MMO_TEST_PASSWORD_NOBODY_SET"
	os.Unsetenv(unset)
	path := filepath.Join(mdir, mmo.ConfigFile)
	body := fmt.Sprintf("iterations = 4096\n\n[database]\nurl = %q\npassword_env = %q\n", c.URLWithoutPassword(db), unset)
	must(t, os.WriteFile(path, []byte(body), 0o600))
	cause := path + ":4: [database] url"

	bin := testplugin.Build(t, "./modules/mmo/cmd/mmo")
	cfg := config.Default()
	cfg.Apply(config.Overrides{DataDir: &dataDir, Modules: []string{"mmo"}}, func(string) string { return "" })
	checks := host.CheckModules(cfg, host.Options{Logger: testLogger(),
		Builtin: func(name string) (string, []string, bool) { return bin, nil, name == "mmo" }}, nil)
	if len(checks) != 1 || checks[0].Err == nil || !strings.Contains(checks[0].String(), cause) || !strings.Contains(checks[0].String(), unset) {
		t.Fatalf("check: %v; want the file, line and key (%q) and the variable to set (%s)", checks, cause, unset)
	}

	t.Log(checks[0])
	srv := startServer(t, dataDir, func(c *config.Config) { c.Ops.Listen = "127.0.0.1:0" })
	ops := "http://" + srv.OpsAddr().String()
	var code int
	var ready string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(ops + "/readyz")
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if code, ready = resp.StatusCode, string(b); strings.Contains(ready, "module mmo is failed") {
			break
		}
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(ready, cause) {
		t.Errorf("/readyz: %d %q; want 503 naming the failed module and %q", code, ready, cause)
	}
	if out, err := srv.Exec("module list"); err != nil || !strings.Contains(out, " failed ") {
		t.Errorf("module list: %q %v", out, err)
	}
	p := dialWith(t, netstack.ClientConfig{Server: srv.Addr(), Name: "alice", Pin: srv.Pin(), DeliverRefusals: true})
	p.s.Timeout = time.Minute // the refusal, not the timeout, must end the request
	began := time.Now()
	_, err = p.s.Register(bg, "alice", "pw-alice")
	if err == nil || !strings.Contains(err.Error(), "the server refused Register") {
		t.Fatalf("a request to the failed module: %v", err)
	}
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("the refusal took %v", took)
	}
}
