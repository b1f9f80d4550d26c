package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/internal/netrig"
)

// TestRigDeathmatchMigration is the migration goal on real kernel paths
// (docs/performance.md, "Migration"): a real `sparkhost run --module
// deathmatch` in the rig's server namespace, 64 bots (`sparkhost bots`, 8
// in each of 8 client namespaces behind the rig's NAT, `home` profile), and
// 100 forced NAT rebindings (one namespace at a time, every 250 ms: each
// moves its 8 sessions). Every bot must stay connected to the end (the
// bots' exit code; a session that lost a reliable message would have ended
// with ReliableDeliveryFailed), the server must log no disconnect before
// the bots quit, and each migration is measured against the session's
// round trip from the server's debug log. SPARK_RIG_REBINDS and
// SPARK_RIG_PROFILE change the rebindings and the profile.
//
//	go test -run TestRigDeathmatchMigration -v ./cmd/sparkhost/
func TestRigDeathmatchMigration(t *testing.T) {
	const namespaces, perNamespace = 8, 8
	rebinds, rig, bin, dir, conf := migrationScene(t, namespaces, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := &lockedLines{}
	srv := rig.Server.Command(ctx, bin, "run", "--config", conf, "--internet", "--bind", rig.Server.Addr.String(),
		"--port", "27015", "--data-dir", filepath.Join(dir, "server"), "--module", "deathmatch")
	srv.Stdout, srv.Stderr = log, log
	srv.Stdin = nil
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	waitLines(t, log, "sparkhost listening on", 1, 60*time.Second)

	duration := 20*time.Second + time.Duration(rebinds)*250*time.Millisecond
	bots := make([]*exec.Cmd, namespaces)
	outs := make([]*lockedLines, namespaces)
	for i := range bots {
		outs[i] = &lockedLines{}
		bots[i] = rig.Client(i).Command(ctx, bin, "bots", "--count", strconv.Itoa(perNamespace),
			"--server", rig.Server.Addr.String()+":27015", "--duration", duration.String(),
			"--seed", strconv.Itoa(i+1), "--data-dir", filepath.Join(dir, fmt.Sprintf("bots%d", i)))
		bots[i].Stdout, bots[i].Stderr = outs[i], outs[i]
		if err := bots[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	waitLines(t, log, "client connected", namespaces*perNamespace, 60*time.Second)
	time.Sleep(2 * time.Second) // every bot has its connection id
	for i := range rebinds {
		if err := rig.Rebind(i % namespaces); err != nil {
			t.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for i, b := range bots {
		if err := b.Wait(); err != nil {
			t.Errorf("bots of namespace %d: %v\n%s", i, err, outs[i].String())
		}
	}
	moves, early := migrationLog(t, log.lines())
	logPathMetrics(t, rig)
	reportMoves(t, rebinds, namespaces*perNamespace, moves, early)
}

// rigServerConf is the server's config in the rig scenarios: every client
// comes from the NAT's one address (no admission caps, generous connect
// budgets), migrations are logged (debug), and /metrics listens on the
// server namespace's own loopback.
const rigServerConf = "[network]\nadmitted_per_address = 0\nadmitted_per_prefix = 0\n" +
	"connect_burst = 1000\nconnect_refill_per_second = 1000\nprefix_burst = 1000\nprefix_refill_per_second = 1000\n" +
	"[logging]\nlevel = \"debug\"\n[ops]\nlisten = \"127.0.0.1:9100\"\n"

// logPathMetrics logs the server's migration counters, read from /metrics
// inside the server's namespace.
func logPathMetrics(t *testing.T, rig *netrig.Rig) {
	t.Helper()
	var conn net.Conn
	err := rig.Server.Do(func() error {
		var err error
		conn, err = net.DialTimeout("tcp", "127.0.0.1:9100", 5*time.Second)
		return err
	})
	if err != nil {
		t.Logf("metrics not read: %v", err)
		return
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
	body, _ := io.ReadAll(conn)
	var got []string
	for _, l := range strings.Split(string(body), "\n") {
		for _, f := range []string{"migrations_total", "path_validations_total", "path_challenges_held_total", "connection_ids_issued_total"} {
			if strings.HasPrefix(l, "sparkhost_net_"+f) {
				got = append(got, strings.TrimPrefix(l, "sparkhost_net_"))
			}
		}
	}
	t.Logf("server: %s", strings.Join(got, ", "))
}

// migrationLog reads the server's log: each migration's time beyond its
// round trip, and the disconnects that were not the bots' own quit.
func migrationLog(t *testing.T, lines []string) (extra []time.Duration, early []string) {
	for _, l := range lines {
		if strings.Contains(l, "client disconnected") && !strings.Contains(l, "reason=ClientQuit") {
			early = append(early, l)
		}
		if !strings.Contains(l, "client moved to a new address") {
			continue
		}
		took, err1 := time.ParseDuration(logField(l, "took"))
		rtt, err2 := time.ParseDuration(logField(l, "rtt"))
		if err1 != nil || err2 != nil {
			t.Fatalf("migration log line %q: %v %v", l, err1, err2)
		}
		extra = append(extra, took-rtt)
	}
	return extra, early
}

func reportMoves(t *testing.T, rebinds, sessions int, extra []time.Duration, early []string) {
	t.Helper()
	slices.Sort(extra)
	over := 0
	for _, e := range extra {
		if e > 50*time.Millisecond {
			over++
		}
	}
	pct := func(p float64) time.Duration {
		if len(extra) == 0 {
			return 0
		}
		return extra[min(len(extra)-1, int(p*float64(len(extra))))]
	}
	t.Logf("%d rebindings, %d sessions: %d migrations; disconnects before the end %d; migration time beyond the round trip: p50 %v p99 %v max %v; over RTT+50ms: %d",
		rebinds, sessions, len(extra), len(early), pct(0.5), pct(0.99), pct(1), over)
	if len(early) > 0 {
		t.Fatalf("disconnects during the run:\n%s", strings.Join(early, "\n"))
	}
	if len(extra) < rebinds {
		t.Fatalf("%d migrations for %d rebindings", len(extra), rebinds)
	}
}

// logField returns the value of key=value in a text log line.
func logField(l, key string) string {
	_, rest, ok := strings.Cut(l, " "+key+"=")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, " ")
	return v
}

func rigEnvInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// lockedLines collects a process's output, safe for concurrent writes.
type lockedLines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lockedLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *lockedLines) lines() []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// waitLines waits until n lines of the output contain s.
func waitLines(t *testing.T, l *lockedLines, s string, n int, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); strings.Count(l.String(), s) < n; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d of %d %q lines in %v:\n%s", strings.Count(l.String(), s), n, s, d, tail(l.String(), 4000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// migrationScene is the set-up both migration scenarios share: skipped in
// -short runs, the rebindings (SPARK_RIG_REBINDS, 100) and the profile
// (SPARK_RIG_PROFILE, home) they ask for, a rig of namespaces NATed client
// namespaces, the sparkhost binary, and a server configuration for
// maxClients in the test's directory.
func migrationScene(t *testing.T, namespaces, maxClients int) (rebinds int, rig *netrig.Rig, bin, dir, conf string) {
	t.Helper()
	if testing.Short() {
		t.Skip("the rig scenario builds sparkhost and runs for about a minute")
	}
	rebinds = rigEnvInt(t, "SPARK_RIG_REBINDS", 100)
	profile := netrig.Home
	if p := os.Getenv("SPARK_RIG_PROFILE"); p != "" {
		var err error
		if profile, err = netrig.ProfileByName(p); err != nil {
			t.Fatal(err)
		}
	}
	rig = netrig.New(t, netrig.Config{Clients: namespaces, Profile: profile, NAT: true})
	bin = buildBinary(t)
	dir = t.TempDir()
	conf = filepath.Join(dir, "rig.toml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("[server]\nmax_clients = %d\n", maxClients)+rigServerConf), 0o644); err != nil {
		t.Fatal(err)
	}
	return rebinds, rig, bin, dir, conf
}
