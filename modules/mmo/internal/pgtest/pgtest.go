// Package pgtest runs a throwaway PostgreSQL cluster for tests: initdb in a
// temporary directory, the postmaster as a child of the test process (as the
// postgres user when the test runs as root), TCP on 127.0.0.1 with an
// ephemeral port and a unix socket in the same directory. A package shares
// one cluster across its tests (start it in TestMain) and gives each test a
// database of its own.
//
// Without PostgreSQL's programs, Start returns ErrUnavailable and the tests
// that need a cluster skip with one line saying so.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrUnavailable: PostgreSQL's programs are not installed here.
var ErrUnavailable = errors.New("PostgreSQL is not installed (no initdb and postgres); install Debian's postgresql package to run these tests")

// PasswordEnv names the variable that tests set to the cluster's password, the
// way an operator passes a database password to sparkhost.
const PasswordEnv = "SPARK_MMO_TEST_DB_PASSWORD"

// Cluster is a running throwaway cluster.
type Cluster struct {
	// Dir is the temporary directory: data/, the socket and the log.
	Dir string
	// Port is the TCP port on 127.0.0.1.
	Port int
	// User and Password are the superuser's; TCP connections need the
	// password (scram-sha-256), the unix socket does not.
	User, Password string

	bin     string
	cred    *syscall.Credential
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	created int
}

// binDir finds the directory holding initdb and postgres.
func binDir() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(r))
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(found) - 1; i >= 0; i-- { // newest version first
		dirs = append(dirs, found[i])
	}
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrUnavailable
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Start creates and starts a cluster. Stop it when done.
func Start() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sparkhost-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, bin: bin, User: "sparkhost", Password: randomHex(12)}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, and there is no postgres user to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := c.initdb(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if c.Port, err = freePort(); err == nil {
			if err = c.Restart(); err == nil {
				return c, nil
			}
		}
		if attempt == 2 {
			c.Stop()
			return nil, err
		}
	}
}

func (c *Cluster) initdb() error {
	pw := filepath.Join(c.Dir, "pwfile")
	if err := os.WriteFile(pw, []byte(c.Password+"\n"), 0o600); err != nil {
		return err
	}
	if c.cred != nil {
		os.Chown(pw, int(c.cred.Uid), int(c.cred.Gid))
	}
	defer os.Remove(pw)
	cmd := exec.Command(filepath.Join(c.bin, "initdb"), "-D", c.data(), "-U", c.User, "--pwfile="+pw,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-instructions")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	cmd.Dir = c.Dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return nil
}

func (c *Cluster) data() string { return filepath.Join(c.Dir, "data") }

// Restart starts the postmaster if it is not running and waits until it
// accepts connections (up to 30 s). The data survives a Kill.
func (c *Cluster) Restart() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(filepath.Join(c.Dir, "postgres.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), "-D", c.data(), "-p", strconv.Itoa(c.Port),
		"-k", c.Dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=on", "-c", "synchronous_commit=on",
		"-c", "max_connections=200", "-c", "shared_buffers=32MB", "-c", "log_min_messages=warning")
	cmd.Stdout, cmd.Stderr = logf, logf
	// The postmaster dies with the test process, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	exited, err := startOnOwnThread(cmd)
	logf.Close()
	if err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	c.cmd, c.exited = cmd, exited
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-exited:
			c.cmd = nil
			return fmt.Errorf("postgres exited at start: %s", c.tailLog())
		case <-ctx.Done():
			c.killLocked()
			return fmt.Errorf("postgres did not accept connections within 30 s: %v; %s", err, c.tailLog())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) tailLog() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "postgres.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// startOnOwnThread starts cmd from a goroutine locked to its OS thread and
// keeps that thread until cmd has exited; exited is closed then. Pdeathsig
// is sent when the thread that forked the child ends, not when the process
// does, and a test process ends threads: a goroutine that ends locked to
// its thread (a network namespace's, a real-time forwarder's) takes the
// thread with it. Forked from an ordinary thread, the postmaster could be
// killed in the middle of a package's tests by whichever test ended the
// thread that had once run the fork.
func startOnOwnThread(cmd *exec.Cmd) (exited chan struct{}, err error) {
	exited = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			runtime.UnlockOSThread()
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		runtime.UnlockOSThread()
		close(exited)
	}()
	return exited, <-started
}

// Kill sends SIGKILL to the postmaster and its backends and waits for them:
// the crash a power cut or an OOM kill would be.
func (c *Cluster) Kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killLocked()
}

func (c *Cluster) killLocked() {
	if c.cmd == nil {
		return
	}
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL) // the process group: postmaster and backends
	<-c.exited
	// Backends notice the postmaster's death on their own; wait until the
	// data directory is free for a restart.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err != nil {
			break
		}
		if !anyBackend(c.data()) {
			os.Remove(filepath.Join(c.data(), "postmaster.pid"))
			break
		}
	}
	c.cmd = nil
}

// anyBackend reports whether a process still has the data directory open as
// its working directory (a backend that has not exited yet).
func anyBackend(data string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		if d, err := os.Readlink(p); err == nil && d == data {
			return true
		}
	}
	return false
}

// Stop stops the cluster and removes its directory.
func (c *Cluster) Stop() {
	c.mu.Lock()
	if c.cmd != nil {
		c.cmd.Process.Signal(syscall.SIGQUIT) // immediate shutdown
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
		}
		c.killLocked()
	}
	c.mu.Unlock()
	os.RemoveAll(c.Dir)
}

// URL is a connection URL for database db over TCP, without the password:
// pass it the way an operator would, through PasswordEnv or URLWithPassword.
func (c *Cluster) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(c.User, c.Password), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)), Path: "/" + db}
	q := url.Values{"sslmode": {"disable"}, "connect_timeout": {"10"}}
	u.RawQuery = q.Encode()
	return u.String()
}

// URLWithoutPassword is URL with the password left out.
func (c *Cluster) URLWithoutPassword(db string) string {
	u, _ := url.Parse(c.URL(db))
	u.User = url.User(c.User)
	return u.String()
}

// CreateDB creates a fresh database and returns its name.
func (c *Cluster) CreateDB(ctx context.Context) (string, error) {
	c.mu.Lock()
	c.created++
	name := fmt.Sprintf("t%d_%s", c.created, randomHex(4))
	c.mu.Unlock()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	// An identifier cannot be a parameter; the name is ours (letters, digits, _).
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return name, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// RequireEnv, when set to 1 (CI sets it), turns "PostgreSQL is not
// installed" from a skip into a failure, so that a CI run cannot pass
// without running the PostgreSQL tests.
const RequireEnv = "SPARK_REQUIRE_POSTGRES"

// Shared is a package's one cluster, started by Main.
var Shared *Cluster

// SkipReason is why Shared is nil.
var SkipReason string

// Main starts Shared for a package's TestMain, runs the tests and stops the
// cluster. Without PostgreSQL it prints one line and the tests that need
// the cluster skip (see Need), unless RequireEnv is set. A child process
// of a test (one the test started from its own binary) passes child and
// gets no cluster of its own.
func Main(pkg string, child bool, run func() int) int {
	if child {
		return run()
	}
	c, err := Start()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			fmt.Fprintf(os.Stderr, "%s: PostgreSQL tests cannot run and %s=1: %v\n", pkg, RequireEnv, err)
			return 1
		}
		SkipReason = err.Error()
		fmt.Printf("%s: PostgreSQL tests skip: %v\n", pkg, err)
		return run()
	}
	Shared = c
	defer c.Stop()
	return run()
}

// Need returns the shared cluster, or skips t.
func Need(t interface {
	Helper()
	Skip(...any)
}) *Cluster {
	t.Helper()
	if Shared == nil {
		t.Skip("PostgreSQL: " + SkipReason)
	}
	return Shared
}
