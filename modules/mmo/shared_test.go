package mmo_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/modules/mmo"
	"github.com/sparkhost/sparkhost/modules/mmo/internal/pgtest"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// Several servers on one PostgreSQL database: one world for accounts.

// A server child process (this test binary again, running
// TestSharedWorldServerChild) is selected by these variables.
const (
	childDataEnv   = "MMO_TEST_CHILD_DATA"
	childPluginEnv = "MMO_TEST_CHILD_PLUGIN"
)

// sharedDB makes a fresh database on the shared cluster and returns its URL
// (without the password, which goes into the environment as an operator's
// would).
func sharedDB(t testing.TB) string {
	t.Helper()
	c := pgtest.Need(t)
	name, err := c.CreateDB(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(mmo.DatabasePasswordEnv, c.Password)
	return c.URLWithoutPassword(name)
}

// sharedDataDir writes a data directory whose mmo config uses the database.
func sharedDataDir(t *testing.T, url string, lease float64) string {
	t.Helper()
	dir := t.TempDir()
	mdir := filepath.Join(dir, "modules", "mmo")
	must(t, os.MkdirAll(mdir, 0o700))
	cfg := fmt.Sprintf("save_interval = 1\n\n[database]\nurl = %q\nlease = %v\n", url, lease)
	must(t, os.WriteFile(filepath.Join(mdir, mmo.ConfigFile), []byte(cfg), 0o600))
	return dir
}

func openShared(t testing.TB, url string) *store.Store {
	t.Helper()
	s, err := store.OpenPostgres(bg, url, pgtest.Shared.Password, store.Options{})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSharedWorldLoggedInElsewhere: alice plays on server A; she logs in on
// server B, and A's session is told LoggedInElsewhere within a second; her
// character leaves A, and enters on B where it stood on A.
func TestSharedWorldLoggedInElsewhere(t *testing.T) {
	url := sharedDB(t)
	srvA := startServer(t, sharedDataDir(t, url, 10), nil)
	srvB := startServer(t, sharedDataDir(t, url, 10), nil)
	db := openShared(t, url)

	a := dial(t, srvA, "alice-on-a")
	_, err := a.s.Register(bg, "alice", "pw-alice")
	must(t, err)
	_, err = a.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	must(t, a.s.Create(bg, "Hero"))
	_, err = a.s.Enter(bg, "Hero")
	must(t, err)
	must(t, a.s.Move(bg, 1, 0))
	time.Sleep(300 * time.Millisecond)

	// B knows the account registered on A.
	b := dial(t, srvB, "alice-on-b")
	if _, err := b.s.Login(bg, "alice", "wrong"); code(err) != mmoproto.AuthFailed {
		t.Fatalf("wrong password on B: %v", err)
	}
	began := time.Now()
	_, err = b.s.Login(bg, "alice", "pw-alice")
	loggedIn := time.Now()
	must(t, err)
	ended := a.waitEvent(t, "mmo logged out: LoggedInElsewhere")
	took := ended.Sub(loggedIn)
	// The notice leaves with B's commit, so A often ends its session before
	// B's answer reaches the client (a negative figure).
	t.Logf("A's session ended %v after B's login began, %v after it returned",
		ended.Sub(began).Round(time.Millisecond), took.Round(time.Millisecond))
	if took > time.Second {
		t.Fatalf("A's session ended %v after the login on B; want within 1 s", took)
	}
	if _, err := a.s.Where(bg); code(err) != mmoproto.NotLoggedIn {
		t.Fatalf("A's session still plays: %v", err)
	}
	e, err := b.s.Enter(bg, "hero")
	must(t, err)
	stored, err := db.Character(bg, "Hero")
	must(t, err)
	if e.X <= 500 || float64(e.X) != float64(float32(stored.X)) || e.Y != 500 {
		t.Fatalf("entered on B at %v,%v; A left it at %v,%v (it walked east from 500,500)", e.X, e.Y, stored.X, stored.Y)
	}
	if h, _, _ := db.Holder(bg, "Hero"); h == "" {
		t.Fatal("no server holds Hero")
	}
	// And back: A takes the login over again, and B's session ends.
	_, err = a.s.Login(bg, "alice", "pw-alice")
	back := time.Now()
	must(t, err)
	if d := b.waitEvent(t, "mmo logged out: LoggedInElsewhere").Sub(back); d > time.Second {
		t.Fatalf("B's session ended %v after the login on A", d)
	}
	out, _ := srvA.Exec("mmo_online")
	if !strings.Contains(out, "database postgres postgres://") || strings.Contains(out, pgtest.Shared.Password) {
		t.Fatalf("mmo_online:\n%s", out)
	}
}

// TestSharedWorldServerKilled: server A (a process of its own) is killed
// with SIGKILL while alice plays Hero there. She logs in on B at once; her
// character is A's until A's lease (2 s here) runs out, then B takes it
// over: the account is locked out no longer than the lease.
func TestSharedWorldServerKilled(t *testing.T) {
	url := sharedDB(t)
	const lease = 2.0
	child, addr, pin := startChildServer(t, sharedDataDir(t, url, lease))
	srvB := startServer(t, sharedDataDir(t, url, lease), nil)
	db := openShared(t, url)

	a := dialAt(t, addr, pin, "alice-on-a")
	_, err := a.s.Register(bg, "alice", "pw-alice")
	must(t, err)
	_, err = a.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	must(t, a.s.Create(bg, "Hero"))
	_, err = a.s.Enter(bg, "Hero")
	must(t, err)
	must(t, a.s.Move(bg, 0, 1))
	time.Sleep(1500 * time.Millisecond) // at least one periodic save (save_interval = 1)
	holderA, _, err := db.Holder(bg, "Hero")
	must(t, err)
	if holderA == "" {
		t.Fatal("A holds no claim on Hero")
	}

	must(t, child.Process.Kill())
	killed := time.Now()
	child.Wait()

	b := dial(t, srvB, "alice-on-b")
	_, err = b.s.Login(bg, "alice", "pw-alice")
	must(t, err) // the login is never locked
	if h, until, _ := db.Holder(bg, "Hero"); h != holderA || !until.After(time.Now().Add(-time.Second)) {
		t.Logf("after the kill: holder %q until %v", h, until)
	}
	e, err := b.s.Enter(bg, "Hero")
	must(t, err)
	waited := time.Since(killed)
	t.Logf("B entered Hero %v after A was killed (lease %v s)", waited.Round(time.Millisecond), lease)
	if waited > time.Duration(lease*float64(time.Second))+1500*time.Millisecond {
		t.Fatalf("Hero was locked %v after the kill; the lease is %v s", waited, lease)
	}
	if e.Y <= 500 {
		t.Fatalf("entered at %v,%v: the positions A saved before it died are lost", e.X, e.Y)
	}
	if h, _, _ := db.Holder(bg, "Hero"); h == holderA || h == "" {
		t.Fatalf("holder after takeover %q (A was %q)", h, holderA)
	}
}

// TestSharedWorldLostNotice: A's notification connection is cut just
// before alice logs in on B, so A never receives that notice; A still ends
// its session, from the comparison with the database that follows every
// reconnection of the listener (and runs every lease/5 in any case).
func TestSharedWorldLostNotice(t *testing.T) {
	url := sharedDB(t)
	srvA := startServer(t, sharedDataDir(t, url, 10), nil)
	srvB := startServer(t, sharedDataDir(t, url, 10), nil)
	a := dial(t, srvA, "alice-on-a")
	_, err := a.s.Register(bg, "alice", "pw-alice")
	must(t, err)
	_, err = a.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	b := dial(t, srvB, "alice-on-b")

	conn := pgConn(t, url)
	// Both servers' listeners go; B's login then reaches no listener at all.
	var cut int
	must(t, conn.QueryRow(bg, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query ILIKE 'listen%'`).Scan(&cut))
	if cut != 2 {
		t.Fatalf("cut %d listener connections, want 2", cut)
	}
	_, err = b.s.Login(bg, "alice", "pw-alice")
	loggedIn := time.Now()
	must(t, err)
	took := a.waitEvent(t, "mmo logged out: LoggedInElsewhere").Sub(loggedIn)
	t.Logf("with the notice lost, A's session ended %v after B's login", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Fatalf("A's session ended %v after the login on B; want within lease/5 + 1 s reconnect", took)
	}
}

// TestSharedWorldDatabaseLost: the database dies (kill -9 of PostgreSQL)
// under a server with a 2 s lease. The server cannot renew its lease, so
// within ¾ of it plus a renewal period it ends its logins ("lost its
// database") rather than go on playing characters another server may take
// over; once PostgreSQL is back, logins work again.
func TestSharedWorldDatabaseLost(t *testing.T) {
	url := sharedDB(t)
	srv := startServer(t, sharedDataDir(t, url, 2), nil)
	a := dial(t, srv, "alice")
	_, err := a.s.Register(bg, "alice", "pw-alice")
	must(t, err)
	_, err = a.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	must(t, a.s.Create(bg, "Hero"))
	_, err = a.s.Enter(bg, "Hero")
	must(t, err)

	pgtest.Shared.Kill()
	killed := time.Now()
	restarted := false
	defer func() {
		if !restarted {
			pgtest.Shared.Restart()
		}
	}()
	took := a.waitEvent(t, "lost its database").Sub(killed)
	t.Logf("logins ended %v after the database died (lease 2 s)", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Fatalf("the server kept its logins %v after the database died; its lease is 2 s", took)
	}
	must(t, pgtest.Shared.Restart())
	restarted = true
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := a.s.Login(bg, "alice", "pw-alice")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no login 20 s after the database came back: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, err = a.s.Enter(bg, "Hero")
	must(t, err)
}

func pgConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	must(t, err)
	cfg.Password = pgtest.Shared.Password
	conn, err := pgx.ConnectConfig(bg, cfg)
	must(t, err)
	t.Cleanup(func() { conn.Close(bg) })
	return conn
}

// startChildServer runs a server in a child process on dataDir and returns
// it with its address and pin.
func startChildServer(t *testing.T, dataDir string) (*exec.Cmd, netip.AddrPort, string) {
	t.Helper()
	bin := testplugin.Build(t, "./modules/mmo/cmd/mmo")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedWorldServerChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childDataEnv+"="+dataDir, childPluginEnv+"="+bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "SERVER ") {
				lines <- sc.Text()
			}
		}
		close(lines)
	}()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("the server child exited:\n%s", stderr.String())
		}
		f := strings.Fields(l)
		addr, err := netip.ParseAddrPort(f[1])
		must(t, err)
		return cmd, addr, f[2]
	case <-time.After(60 * time.Second):
		t.Fatalf("the server child did not start within 60 s:\n%s", stderr.String())
	}
	return nil, netip.AddrPort{}, ""
}

// TestSharedWorldServerChild is the child process of startChildServer; run
// directly it skips. It serves until killed (or for two minutes at most).
func TestSharedWorldServerChild(t *testing.T) {
	dir := os.Getenv(childDataEnv)
	if dir == "" {
		t.Skip("the server child process of TestSharedWorldServerKilled")
	}
	var port func(*config.Config)
	if p, err := strconv.Atoi(os.Getenv(childPortEnv)); err == nil {
		port = func(c *config.Config) { c.Server.Port = p }
	}
	srv := startServer(t, dir, port)
	// The module is loaded once it answers a command.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if out, err := srv.Exec("mmo_online"); err == nil && strings.Contains(out, "server ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the mmo module did not load")
		}
	}
	fmt.Printf("SERVER %s %s\n", srv.Addr(), srv.Pin())
	time.Sleep(2 * time.Minute)
}
