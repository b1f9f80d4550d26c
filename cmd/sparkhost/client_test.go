package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// newClientTestServer starts a netstack server on 127.0.0.1 with an ephemeral port.
func newClientTestServer(t *testing.T) *netstack.Server {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var srv *netstack.Server
	srv, err = netstack.NewServer(netstack.ServerConfig{
		Bind: "127.0.0.1", Identity: priv, Logger: slog.New(slog.DiscardHandler),
		Registry: gamemsg.NewRegistry(),
		Welcome: gamemsg.Welcome(func(id uint32, dst []byte) []byte {
			return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{
				ClientID: id, ServerTime: srv.Time(), TickRate: 60, ReplicationRate: 20,
				ServerName: "testsrv", MOTD: "hello", Mode: gamemsg.ModeCustom,
			})
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Close() })
	return srv
}

func TestClientCommandExec(t *testing.T) {
	srv := newClientTestServer(t)
	addr := srv.Addr().String()

	t.Run("pin", func(t *testing.T) {
		var out, errOut bytes.Buffer
		script := fmt.Sprintf(`connect %s alice; wait "^server: testsrv — hello$" 5s; say "hi; all"; status; disconnect`, addr)
		code := runClient([]string{"--data-dir", t.TempDir(), "--pin", srv.Pin(), "--exec", script}, strings.NewReader("bogus\n"), &out, &errOut)
		if code != 0 {
			t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		}
		for _, want := range []string{"connected to " + addr + " as alice (id ", "said: hi; all\n",
			"status: connected to " + addr, "disconnected: ClientQuit (client quit)\n"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("stdout lacks %q:\n%s", want, out.String())
			}
		}
		if strings.Contains(out.String(), "bogus") {
			t.Error("--exec also read standard input")
		}
	})

	t.Run("known_hosts trust on first use", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		var out, errOut bytes.Buffer
		code := runClient([]string{"--data-dir", dir, "--exec", "connect " + addr + " bob"}, nil, &out, &errOut)
		if code != 0 {
			t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		}
		if !strings.Contains(out.String(), "trusting new server "+addr+" key "+srv.Pin()) {
			t.Errorf("no trust line:\n%s", out.String())
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("data dir: %v, %v", fi, err)
		}
	})

	t.Run("a failed command fails the run", func(t *testing.T) {
		var out, errOut bytes.Buffer
		script := fmt.Sprintf("connect %s carol; wait absent 100ms; status", addr)
		code := runClient([]string{"--data-dir", t.TempDir(), "--pin", srv.Pin(), "--exec", script}, nil, &out, &errOut)
		if code != 1 {
			t.Errorf("exit code %d, want 1:\n%s", code, out.String())
		}
		if !strings.Contains(out.String(), `error: wait: no event matching "absent" within 100ms`) || strings.Contains(out.String(), "status:") {
			t.Errorf("stdout:\n%s", out.String())
		}
	})
}

func TestClientCommandStdin(t *testing.T) {
	srv := newClientTestServer(t)
	var out, errOut bytes.Buffer
	in := strings.NewReader(fmt.Sprintf("connect %s dave\nnet_status\nbogus\nstatus\n", srv.Addr()))
	code := runClient([]string{"--data-dir", t.TempDir(), "--pin", srv.Pin()}, in, &out, &errOut)
	if code != 1 {
		t.Errorf("exit code %d, want 1:\n%s", code, out.String())
	}
	for _, want := range []string{"net: ping ", `error: unknown command "bogus"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "> ") || strings.Contains(out.String(), "status:") {
		t.Errorf("piped stdin ran as a prompt or past the failure:\n%s", out.String())
	}
}

func TestClientCommandFlags(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{name: "help", args: []string{"--help"}, code: 0, stdout: "wait PATTERN [TIMEOUT]"},
		{name: "unknown flag", args: []string{"--bogus"}, code: 2, stderr: "flag provided but not defined"},
		{name: "bad pin", args: []string{"--pin", "abc"}, code: 2, stderr: "--pin"},
		{name: "stray argument", args: []string{"connect"}, code: 2, stderr: "unexpected argument"},
		{name: "unterminated quote", args: []string{"--exec", `say "x`}, code: 2, stderr: "unterminated"},
		{name: "empty exec", args: []string{"--exec", ""}, code: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"--data-dir", t.TempDir()}, tc.args...)
			if code := runClient(args, strings.NewReader(""), &out, &errOut); code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("want stdout %q, stderr %q\nstdout:\n%s\nstderr:\n%s", tc.stdout, tc.stderr, out.String(), errOut.String())
			}
		})
	}
}

// TestClientReachesV3Server: `sparkhost client` speaks v4 and falls back to
// v3 for a server that speaks only v3; --protocol 4 refuses to.
func TestClientReachesV3Server(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := netstack.NewServer(netstack.ServerConfig{Bind: "127.0.0.1", Identity: priv, MaxProtocol: 3, Logger: slog.New(slog.DiscardHandler),
		Registry: gamemsg.NewRegistry(), Welcome: gamemsg.Welcome(func(id uint32, dst []byte) []byte {
			return gamemsg.AppendGameStateSync(dst, &gamemsg.GameStateSync{ClientID: id, TickRate: 60, ReplicationRate: 20, ServerName: "old", Mode: gamemsg.ModeCustom})
		})})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Close() })
	addr := srv.Addr().String()

	var out, errOut bytes.Buffer
	code := runClient([]string{"--data-dir", t.TempDir(), "--pin", srv.Pin(), "--exec", "connect " + addr + " old; status; disconnect"}, nil, &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "connected to "+addr+" as old") || !strings.Contains(out.String(), "protocol v3") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	code = runClient([]string{"--data-dir", t.TempDir(), "--pin", srv.Pin(), "--protocol", "4", "--exec", "connect " + addr + " strict"}, nil, &out, &errOut)
	if code != 1 || !strings.Contains(out.String()+errOut.String(), "ProtocolTooNew") {
		t.Fatalf("--protocol 4 against a v3 server: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if code := runClient([]string{"--protocol", "5", "--exec", "status"}, nil, &out, &errOut); code != 2 {
		t.Fatalf("--protocol 5: exit %d", code)
	}
}
