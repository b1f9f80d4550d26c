package mmo_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/internal/syncbuf"
	"github.com/sparkhost/sparkhost/internal/udprelay"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoclient"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// The player console of the MMO resumes its seat after an outage by itself
// and its session goes on — logged in, in the world, in the same place —
// without the player logging in again (real server and plugin, PostgreSQL,
// UDP on loopback through a relay that goes dark).
func TestConsoleResumesMMOSession(t *testing.T) {
	srv := startServer(t, t.TempDir(), func(c *config.Config) {
		c.Server.ClientTimeout, c.Server.HeartbeatInterval = 1, 0.2
		c.Network.ResumeSeconds = 10
	})
	relay, err := udprelay.New(srv.Addr())
	must(t, err)
	t.Cleanup(relay.Close)
	reg := gamemsg.NewRegistry()
	must(t, mmoclient.RegisterTypes(reg))
	var out syncbuf.Buffer
	con := client.NewConsole(client.Config{Pin: srv.Pin(), Registry: reg, Timeout: time.Second, Out: &out})
	t.Cleanup(con.Close)
	must(t, mmoclient.Register(con, mmoclient.Options{Iterations: testIterations}))
	exec := func(line string) {
		t.Helper()
		if err := con.Exec(line); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out.String())
		}
	}
	waitOut := func(want string, n int) {
		t.Helper()
		for end := time.Now().Add(20 * time.Second); strings.Count(out.String(), want) < n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("no %q in:\n%s", want, out.String())
			}
		}
	}
	exec("connect " + relay.Addr().String() + " alice")
	exec("mmo_session_register alice pw-alice")
	exec("mmo_session_login alice pw-alice")
	exec("mmo_session_create Alice")
	exec("mmo_session_enter Alice")
	exec("mmo_session_where")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	where := lines[len(lines)-1]
	exec("mmo_session_status")
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	status := lines[len(lines)-1]

	relay.SetDark(true)
	waitOut("connection lost; trying to resume your seat", 1)
	relay.SetDark(false)
	waitOut("seat resumed as client ", 1)
	exec("mmo_session_where") // no login: the session went on
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	if got := lines[len(lines)-1]; got != where {
		t.Fatalf("where after the resumption %q, before %q\n%s", got, where, out.String())
	}
	exec("mmo_session_status") // the console's session state went on too
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	if got := lines[len(lines)-1]; got != status {
		t.Fatalf("status after the resumption %q, before %q", got, status)
	}
	after := out.String()[strings.Index(out.String(), "seat resumed as client "):]
	if strings.Contains(after, "logged out") {
		t.Fatalf("logged out after the resumption:\n%s", out.String())
	}
}
