package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/host/admin"
)

// adminServer serves a registry with echo (joins its words with |) and
// quiet (answers nothing) on
// DIR/admin.sock in a fresh short directory and returns DIR.
func adminServer(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sh") // short: Unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	startAdminSocket(t, dir)
	return dir
}

func startAdminSocket(t *testing.T, dir string) {
	t.Helper()
	r := admin.NewRegistry()
	err := r.Register(admin.Command{Name: "echo", Usage: "WORDS...", Owner: admin.Builtin, Run: func(args []string) (string, error) {
		if len(args) == 0 {
			return "", admin.UsageError()
		}
		return strings.Join(args, "|"), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Register(admin.Command{Name: "quiet", Owner: admin.Builtin, Run: func([]string) (string, error) { return "", nil }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := admin.ListenSocket(filepath.Join(dir, admin.SocketName), r.Execute, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
}

func runAdminCapture(args ...string) (code int, stdout, stderr string) {
	var out, errOut strings.Builder
	code = runAdmin(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestAdminCommandExitCodes(t *testing.T) {
	dir := adminServer(t)
	if code := adminCommand([]string{"--data-dir", dir, "echo", "x"}); code != 0 {
		t.Errorf("echo: exit %d; want 0", code)
	}
	if code := adminCommand([]string{"--data-dir", dir, "nope"}); code != 1 {
		t.Errorf("unknown command: exit %d; want 1", code)
	}
	if code := adminCommand([]string{"--data-dir", filepath.Join(dir, "elsewhere"), "echo", "x"}); code != 1 {
		t.Errorf("no server: exit %d; want 1", code)
	}
	if code := adminCommand(nil); code != 2 {
		t.Errorf("no command: exit %d; want 2", code)
	}
}

func TestAdminCommandOutput(t *testing.T) {
	dir := adminServer(t)
	cases := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"plain", []string{"echo", "a", "b"}, 0, "a|b\n", ""},
		{"arguments keep their spaces and quotes", []string{"echo", "hello world", `it's "quoted"`, `back\slash`, ""},
			0, "hello world|it's \"quoted\"|back\\slash|\n", ""},
		{"flags after the command are arguments", []string{"echo", "--data-dir", "x"}, 0, "--data-dir|x\n", ""},
		{"help of one command", []string{"help", "echo"}, 0, "usage: echo WORDS...\n(from the host (builtin))\n", ""},
		{"empty answer prints nothing", []string{"quiet"}, 0, "", ""},
		{"unknown command", []string{"nope"}, 1, "", "sparkhost admin: unknown command \"nope\"; type help for the list\n"},
		{"usage error", []string{"echo"}, 1, "", "sparkhost admin: usage: echo WORDS...\n"},
		{"newline in an argument", []string{"echo", "a\nb"}, 1, "", "sparkhost admin: the command line must not contain a newline or a NUL byte\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runAdminCapture(append([]string{"--data-dir", dir}, tc.args...)...)
			if code != tc.code || stdout != tc.stdout || stderr != tc.stderr {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestAdminCommandNoServer(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runAdminCapture("--data-dir", dir, "help")
	want := "sparkhost admin: no server is running with data dir " + dir + " (socket " + filepath.Join(dir, "admin.sock") + ")\n"
	if code != 1 || stdout != "" || stderr != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1, \"\", %q", code, stdout, stderr, want)
	}
}

func TestAdminCommandDefaultDataDir(t *testing.T) {
	dir, err := os.MkdirTemp("", "sh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Chdir(dir)
	if err := os.Mkdir("data", 0o700); err != nil {
		t.Fatal(err)
	}
	startAdminSocket(t, "data")
	code, stdout, stderr := runAdminCapture("echo", "default")
	if code != 0 || stdout != "default\n" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestAdminCommandUsage(t *testing.T) {
	for _, flag := range []string{"--help", "-h"} {
		code, stdout, stderr := runAdminCapture(flag)
		if code != 0 || !strings.HasPrefix(stdout, "usage: sparkhost admin [--data-dir DIR] COMMAND [ARGS...]") || stderr != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", flag, code, stdout, stderr)
		}
	}
	for _, args := range [][]string{nil, {"--data-dir", "x"}, {"--bogus", "help"}, {"--data-dir", "", "help"}} {
		code, stdout, stderr := runAdminCapture(args...)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "sparkhost admin: ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and an error", args, code, stdout, stderr)
		}
	}
}
