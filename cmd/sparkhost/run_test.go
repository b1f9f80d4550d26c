package main

import (
	"bufio"
	"context"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// buildBinary compiles sparkhost once per test run.
func buildBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sparkhost")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type runningServer struct {
	cmd     *exec.Cmd
	addr    netip.AddrPort
	pin     string
	webPort int // the web transports' port, when [web] is on
}

// startServer runs `sparkhost run` on 127.0.0.1 with an ephemeral port and
// reads the address and pin it prints.
func startServer(t *testing.T, bin, dataDir string, extra ...string) *runningServer {
	t.Helper()
	return startServerIn(t, bin, "", dataDir, extra...)
}

// startServerIn is startServer with the working directory dir ("" = the
// test's), where module names find scripts/NAME.lua.
func startServerIn(t *testing.T, bin, dir, dataDir string, extra ...string) *runningServer {
	t.Helper()
	return startServerWeb(t, bin, dir, dataDir, false, extra...)
}

// startCommand starts bin with args in dir ("" = the test's), the
// environment's bind address cleared and stderr shown when
// SPARK_TEST_SERVER_LOG is set, and returns it with its standard output;
// the test's cleanup kills it.
func startCommand(t *testing.T, bin, dir string, args ...string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if os.Getenv("SPARK_TEST_SERVER_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	cmd.Env = append(os.Environ(), "SPARK_NETWORK_BIND_ADDRESS=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, stdout
}

// startServerWeb is startServerIn that, with web set, also waits for the
// web transports' line (the config must enable [web]).
func startServerWeb(t *testing.T, bin, dir, dataDir string, web bool, extra ...string) *runningServer {
	t.Helper()
	args := append([]string{"run", "--port", "0", "--bind", "127.0.0.1", "--data-dir", dataDir}, extra...)
	cmd, stdout := startCommand(t, bin, dir, args...)
	rs := &runningServer{cmd: cmd}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for rs.pin == "" || !rs.addr.IsValid() || (web && rs.webPort == 0) {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("server exited before printing its address and pin")
			}
			if a, ok := strings.CutPrefix(l, "sparkhost listening on "); ok {
				rs.addr = netip.MustParseAddrPort(a)
			}
			if p, ok := strings.CutPrefix(l, "server identity pin: "); ok {
				rs.pin = p
			}
			if w, ok := strings.CutPrefix(l, "web transports on port "); ok {
				rs.webPort, _ = strconv.Atoi(w[:strings.IndexByte(w, ':')])
			}
		case <-deadline:
			t.Fatal("server did not print its address and pin in 30 s")
		}
	}
	go func() {
		for range lines {
		}
	}()
	return rs
}

func dialServer(t *testing.T, rs *runningServer, name string) *netstack.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: rs.addr, Name: name, Pin: rs.pin})
	if err != nil {
		t.Fatalf("dial %s: %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRunTransportAlone: `sparkhost run` without a module admits clients,
// sends GameStateSync with the configured name, relays chat with the admitted
// name, keeps its identity across restarts, and on SIGTERM tells every client
// ServerShutdown.
func TestRunTransportAlone(t *testing.T) {
	bin := buildBinary(t)
	dataDir := filepath.Join(shortTempDir(t), "data")
	rs := startServer(t, bin, dataDir)

	fi, err := os.Stat(filepath.Join(dataDir, "server_identity.key"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("identity key mode %v, want 0600", fi.Mode().Perm())
	}

	alice := dialServer(t, rs, "alice")
	bob := dialServer(t, rs, "bob")
	if gs, _ := gamemsg.ParseGameStateSync(alice.Welcome().Payload); gs.ServerName != "sparkhost" || gs.ClientID != alice.ID() {
		t.Errorf("GameStateSync = %+v", gs)
	}
	chatAliceToBob(t, alice, bob)
	shutdownTellsClients(t, rs, alice, bob)

	again := startServer(t, bin, dataDir)
	if again.pin != rs.pin {
		t.Errorf("pin changed across restart: %s then %s", rs.pin, again.pin)
	}
}

// TestRunRefusesBadSettings: bad bind addresses and config files stop
// start-up with one line that names the problem.
func TestRunRefusesBadSettings(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"wildcard bind", []string{"--bind", "0.0.0.0"}, "wildcard"},
		{"public bind", []string{"--bind", "8.8.8.8"}, "public"},
		{"unknown key", []string{"--config", write("unknown.toml", "[server]\nname = \"x\"\ncolour = 3\n")}, `unknown key "server.colour"`},
		{"wrong type", []string{"--config", write("type.toml", "[server]\nport = \"high\"\n")}, "port"},
		{"port out of range", []string{"--config", write("range.toml", "[server]\nport = 70000\n")}, "server.port = 70000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--data-dir", filepath.Join(dir, "data")}, tc.args...)
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "SPARK_NETWORK_BIND_ADDRESS=")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("server started; output:\n%s", out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output %q does not mention %q", out, tc.want)
			}
		})
	}
}

// chatAliceToBob sends "hi bob" from alice and waits (10 s at most) for
// bob to receive it as a ChatMessage from alice.
func chatAliceToBob(t *testing.T, alice, bob *netstack.Client) {
	t.Helper()
	if err := alice.Send(gamemsg.TypeChatMessage, wire.Reliable, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "hi bob"})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		m, err := bob.Receive(ctx)
		if err != nil {
			t.Fatalf("bob waiting for chat: %v", err)
		}
		if m.Header.Type != gamemsg.TypeChatMessage {
			continue
		}
		if msg, err := gamemsg.ParseChatMessage(m.Payload); err != nil || msg.Sender != "alice" || msg.Text != "hi bob" {
			t.Fatalf("bob got %+v (%v)", msg, err)
		}
		return
	}
}

// shutdownTellsClients sends the server SIGTERM and checks that every one
// of clients is told ServerShutdown within 10 s and the server exits 0.
func shutdownTellsClients(t *testing.T, rs *runningServer, clients ...*netstack.Client) {
	t.Helper()
	if err := rs.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("client still connected 10 s after SIGTERM")
		}
		if r, _ := c.CloseReason(); r != wire.DisconnectServerShutdown {
			t.Errorf("close reason %v, want ServerShutdown", r)
		}
	}
	if err := rs.cmd.Wait(); err != nil {
		t.Errorf("server exit: %v", err)
	}
}
