package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/hosttest"
	"github.com/sparkhost/sparkhost/internal/syncbuf"
)

func TestBotsFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"--help"}, 0, "usage: sparkhost bots"},
		{"no count", []string{"--server", "127.0.0.1:1"}, 2, "--count is required"},
		{"zero count", []string{"--count", "0", "--server", "127.0.0.1:1"}, 2, "--count 0: want 1..4096"},
		{"too many", []string{"--count", "5000", "--server", "127.0.0.1:1"}, 2, "--count 5000"},
		{"not a number", []string{"--count", "x"}, 2, `invalid value "x" for flag -count`},
		{"no server", []string{"--count", "1"}, 2, "--server is required"},
		{"bad server", []string{"--count", "1", "--server", "localhost"}, 2, `--server "localhost": want an IPv4 address and port`},
		{"ipv6 server", []string{"--count", "1", "--server", "[::1]:27015"}, 2, "want an IPv4 address"},
		{"port 0", []string{"--count", "1", "--server", "127.0.0.1:0"}, 2, "want an IPv4 address"},
		{"bad pin", []string{"--count", "1", "--server", "127.0.0.1:1", "--pin", "rsa:x"}, 2, "--pin:"},
		{"bad rate", []string{"--count", "1", "--server", "127.0.0.1:1", "--rate", "5000"}, 2, "--rate 5000"},
		{"negative duration", []string{"--count", "1", "--server", "127.0.0.1:1", "--duration", "-1s"}, 2, "--duration -1s is negative"},
		{"bad connect", []string{"--count", "1", "--server", "127.0.0.1:1", "--connect", "0"}, 2, "--connect 0: want 1..256"},
		{"bad service", []string{"--count", "1", "--server", "127.0.0.1:1", "--service", "0s"}, 2, "--service 0s: want 1ms..1s"},
		{"extra argument", []string{"--count", "1", "--server", "127.0.0.1:1", "go"}, 2, `unexpected argument "go"`},
		{"bad maps dir", []string{"--count", "1", "--server", "127.0.0.1:1", "--maps-dir", "/nonexistent"}, 1, "maps directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runBots(context.Background(), c.args, &out, &errOut)
			if code != c.code || !strings.Contains(out.String()+errOut.String(), c.want) {
				t.Fatalf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, c.code, c.want, out.String(), errOut.String())
			}
		})
	}
}

// startBotsHost runs a DedicatedServer in process on 127.0.0.1 with an
// ephemeral port, a Connect budget for many clients, and no module.
func startBotsHost(t *testing.T) *host.Server {
	t.Helper()
	cfg := config.Default()
	port, dataDir := 0, filepath.Join(shortTempDir(t), "data")
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir}, func(string) string { return "" })
	cfg.Network.ConnectBurst, cfg.Network.PrefixBurst = 256, 256
	cfg.Match.WarmupSeconds = 0
	srv, err := host.New(host.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hosttest.Run(t, srv)
	return srv
}

// botsRun is a `sparkhost bots` run in a goroutine.
type botsRun struct {
	code        chan int
	out, errOut syncbuf.Buffer
}

func startBots(args ...string) *botsRun {
	return startBotsCtx(context.Background(), args...)
}

// startBotsCtx is startBots whose run ends, as at --duration, when ctx does.
func startBotsCtx(ctx context.Context, args ...string) *botsRun {
	r := &botsRun{code: make(chan int, 1)}
	go func() { r.code <- runBots(ctx, args, &r.out, &r.errOut) }()
	return r
}

func (r *botsRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case c := <-r.code:
		return c
	case <-time.After(60 * time.Second):
		t.Fatalf("sparkhost bots still running after 60 s\nstdout:\n%s\nstderr:\n%s", r.out.String(), r.errOut.String())
	}
	return -1
}

// waitPlayers polls `players` until every name is listed.
func waitPlayers(t *testing.T, exec func(string) (string, error), names ...string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := exec("players")
		if err != nil {
			t.Fatal(err)
		}
		missing := ""
		for _, n := range names {
			if !regexp.MustCompile(`\b` + n + `\b`).MatchString(out) {
				missing = n
				break
			}
		}
		if missing == "" {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("players does not list %s after 20 s:\n%s", missing, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// summaryRow returns the fields of bot name's line of the summary.
func summaryRow(t *testing.T, out, name string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 11 && f[0] == name {
			return f
		}
	}
	t.Fatalf("no summary line for %s:\n%s", name, out)
	return nil
}

// TestBotsConnectAndStay: N bots connect to a server on 127.0.0.1, the
// server's `players` lists bot1..botN, they send inputs until --duration and
// leave cleanly.
func TestBotsConnectAndStay(t *testing.T) {
	srv := startBotsHost(t)
	const n = 6
	r := startBots("--count", strconv.Itoa(n), "--server", srv.Addr().String(), "--pin", srv.Pin(),
		"--duration", "3s", "--seed", "7")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bot%d", i+1)
	}
	players := waitPlayers(t, srv.Exec, names...)
	if strings.Count(players, "bot") != n {
		t.Fatalf("players:\n%s", players)
	}
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, r.out.String(), r.errOut.String())
	}
	out := r.out.String()
	if !strings.Contains(out, fmt.Sprintf("%d of %d bots connected to %s", n, n, srv.Addr())) {
		t.Fatalf("stdout:\n%s", out)
	}
	for _, name := range names {
		f := summaryRow(t, out, name)
		if inputs, _ := strconv.Atoi(f[2]); inputs < 60 || f[10] != "ok" {
			t.Fatalf("%s: %v (want ≥ 60 inputs in 3 s at 60 Hz and end ok)\n%s", name, f, out)
		}
	}
	// They left with ClientQuit.
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, _ := srv.Exec("players")
		if p == "no players" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bots still listed after they stopped:\n%s", p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBotsTrustOnFirstUse: without --pin the bots trust the server on first
// use, recorded in known_hosts of --data-dir, once.
func TestBotsTrustOnFirstUse(t *testing.T) {
	srv := startBotsHost(t)
	dir := t.TempDir()
	r := startBots("--count", "2", "--server", srv.Addr().String(), "--data-dir", dir, "--duration", "500ms")
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, r.out.String(), r.errOut.String())
	}
	if got := strings.Count(r.out.String(), "trusted new server "+srv.Addr().String()+" with pin "+srv.Pin()); got != 1 {
		t.Fatalf("%d trust lines:\n%s", got, r.out.String())
	}
	kh, err := os.ReadFile(filepath.Join(dir, "known_hosts"))
	if err != nil || !strings.Contains(string(kh), srv.Pin()) {
		t.Fatalf("known_hosts: %v\n%s", err, kh)
	}
}

// TestBotsNoServer: nothing answers; the run stops at --duration and says so.
func TestBotsNoServer(t *testing.T) {
	srv := startBotsHost(t) // a pin to trust, but another port
	r := startBots("--count", "2", "--server", "127.0.0.1:9", "--pin", srv.Pin(), "--duration", "1s")
	if code := r.wait(t); code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, r.out.String(), r.errOut.String())
	}
	if !strings.Contains(r.out.String(), "0 of 2 bots connected") || !strings.Contains(r.errOut.String(), "bot1:") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", r.out.String(), r.errOut.String())
	}
}

// TestBotsPlayDeathmatch is the operator's view: `sparkhost run --module
// deathmatch` (the built-in module, with its embedded maps, from a
// directory without maps/) and `sparkhost bots`: the bots are listed, they
// spawn (PlayerRespawn), their inputs are applied and acknowledged
// (InputAck), and the module reports them in dm_status. The bots play
// until the test has seen them listed (each look runs `sparkhost admin`, a
// process, which on a busy machine takes seconds), and at least 3 s: a
// fixed --duration raced the looks (60 s bounds it).
func TestBotsPlayDeathmatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dataDir := filepath.Join(shortTempDir(t), "data")
	rs := startServer(t, bin, dataDir, "--module", "deathmatch")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	began := time.Now()
	r := startBotsCtx(ctx, "--count", "3", "--server", rs.addr.String(), "--pin", rs.pin, "--duration", "60s")
	waitPlayers(t, func(string) (string, error) { return adminOutput(bin, dataDir, "players") }, "bot1", "bot2", "bot3")
	status, err := adminOutput(bin, dataDir, "dm_status")
	if err != nil || !strings.Contains(status, "map arena") || !strings.Contains(status, "bot3") {
		t.Fatalf("dm_status: %v\n%s", err, status)
	}
	t.Logf("the bots were listed and in dm_status %v after they started", time.Since(began).Round(time.Millisecond))
	time.Sleep(time.Until(began.Add(3 * time.Second)))
	stop()
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, r.out.String(), r.errOut.String())
	}
	t.Logf("sparkhost bots:\n%s", r.out.String())
	for _, name := range []string{"bot1", "bot2", "bot3"} {
		f := summaryRow(t, r.out.String(), name)
		inputs, _ := strconv.Atoi(f[2])
		acks, _ := strconv.Atoi(f[3])
		respawns, _ := strconv.Atoi(f[4])
		if respawns < 1 || acks < inputs/2 || f[10] != "ok" {
			t.Fatalf("%s: %v: want a respawn and most inputs acknowledged\n%s", name, f, r.out.String())
		}
	}
	info, err := adminOutput(bin, dataDir, "module", "info", "deathmatch")
	if err != nil || !strings.Contains(info, "state running") {
		t.Fatalf("module info: %v\n%s", err, info)
	}
}

func adminOutput(bin, dataDir string, args ...string) (string, error) {
	out, err := exec.Command(bin, append([]string{"admin", "--data-dir", dataDir}, args...)...).CombinedOutput()
	return string(out), err
}

// TestBotsConnectAtOnce: bots connect --connect at a time (16 by default),
// not one after another. The server is a socket that never answers, so
// every bot's handshake waits until --duration: the distinct sources of
// the hellos it receives meanwhile are the bots connecting at once.
func TestBotsConnectAtOnce(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 8},                        // the default: all 8 at once
		{[]string{"--connect", "3"}, 3}, // at most 3
		{[]string{"--rooms", "2", "--connect", "4"}, 2}, // a room's bots in turn: two rooms, two at once
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			silent, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer silent.Close()
			srv := startBotsHost(t) // a pin to trust
			args := append([]string{"--count", "8", "--server", silent.LocalAddr().String(), "--pin", srv.Pin(), "--duration", "2s"}, c.args...)
			r := startBots(args...)
			sources := make(map[string]bool)
			buf := make([]byte, 2048)
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
				_ = silent.SetReadDeadline(deadline)
				if _, from, err := silent.ReadFromUDP(buf); err == nil {
					sources[from.String()] = true
				}
			}
			if code := r.wait(t); code != 1 {
				t.Fatalf("exit %d, want 1 (nobody connected)\n%s%s", code, r.out.String(), r.errOut.String())
			}
			if len(sources) != c.want {
				t.Fatalf("%d bots sent hellos during the first 2 s, want %d connecting at once", len(sources), c.want)
			}
		})
	}
}

// TestBotsRoomRequestUnanswered: a room request the server never answers
// (over the sender's request budget, it is dropped) fails its bot, naming
// the request, and the run ends with the others, instead of waiting until
// --duration with the room's next bots never started.
func TestBotsRoomRequestUnanswered(t *testing.T) {
	defer func(d time.Duration) { roomAnswerWait = d }(roomAnswerWait)
	roomAnswerWait = 2 * time.Second
	cfg := config.Default()
	port, dataDir := 0, filepath.Join(shortTempDir(t), "data")
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir, Rooms: true, Modes: []string{"../../scripts/tag.lua"}}, func(string) string { return "" })
	cfg.Network.ConnectBurst, cfg.Network.PrefixBurst = 256, 256
	// One request, then none for 100 s: a creator's RoomCreate is carried
	// out, its RoomStart dropped.
	cfg.Rooms.RequestsPerSecond, cfg.Rooms.RequestBurst = 0.01, 1
	srv, err := host.New(host.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hosttest.Run(t, srv)
	r := startBots("--count", "4", "--rooms", "2", "--mode", "tag", "--server", srv.Addr().String(), "--pin", srv.Pin(), "--duration", "50s")
	if code := r.wait(t); code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, r.out.String(), r.errOut.String())
	}
	for _, want := range []string{"bot1: room: no answer to RoomStart within 2s", "bot3: room: no answer to RoomStart within 2s",
		"bot2: room: the room's first bot did not open it", "bot4: room: the room's first bot did not open it"} {
		if !strings.Contains(r.errOut.String(), want) {
			t.Fatalf("stderr lacks %q:\n%s", want, r.errOut.String())
		}
	}
}

// TestBotsOneGoroutinePlaysAll: the bots of a run are played by one
// goroutine (netbot.Group), not a goroutine and a ticker each, whose
// wake-ups cost a thousand bots a core: while 12 bots play, one goroutine
// of this process plays them (a bot's Run or a Group's), and the bots send their inputs.
func TestBotsOneGoroutinePlaysAll(t *testing.T) {
	srv := startBotsHost(t)
	const n = 12
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	r := startBotsCtx(ctx, "--count", strconv.Itoa(n), "--server", srv.Addr().String(), "--pin", srv.Pin(), "--duration", "60s")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bot%d", i+1)
	}
	waitPlayers(t, srv.Exec, names...)
	var stacks bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&stacks, 2); err != nil {
		t.Fatal(err)
	}
	playing := 0
	for _, g := range strings.Split(stacks.String(), "\n\n") {
		if strings.Contains(g, "netbot.(*Bot).Run(") || strings.Contains(g, "netbot.(*Group).run(") {
			playing++
		}
	}
	time.Sleep(time.Second)
	stop()
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, r.out.String(), r.errOut.String())
	}
	if playing != 1 {
		t.Fatalf("%d goroutines play while %d bots play, want 1", playing, n)
	}
	for _, name := range names {
		if inputs, _ := strconv.Atoi(summaryRow(t, r.out.String(), name)[2]); inputs < 20 {
			t.Fatalf("%s sent %d inputs, want ≥ 20 in over a second at 60 Hz\n%s", name, inputs, r.out.String())
		}
	}
}
