package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// runBinary runs the built sparkhost with args and returns its exit code,
// stdout and stderr.
func runBinary(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

func TestCheck(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	broken := write("broken.lua", "function broken(\n", 0o644)
	notPlugin := write("notplugin", "#!/bin/sh\necho not a plugin >&2\nexit 3\n", 0o755)
	badKey := write("bad.toml", "[server]\nname = \"x\"\ncolour = \"red\"\n", 0o644)
	good := write("good.toml", "[modules]\nload = [\"mmo\"]\n", 0o644)
	hello, _ := filepath.Abs("../../scripts/hello.lua")
	data := filepath.Join(dir, "data")

	t.Run("everything loads", func(t *testing.T) {
		code, out, errs := runBinary(t, bin, "check", "--config", good, "--data-dir", data, "--module", "deathmatch", "--module", hello)
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		for _, want := range []string{"config " + good + ": ok", "module mmo: ok: mmo ", "(plugin)", "module deathmatch: ok: deathmatch",
			"module " + hello + ": ok: hello", "check passed"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "listening") {
			t.Errorf("check served:\n%s", out)
		}
	})
	t.Run("one line per problem", func(t *testing.T) {
		code, out, errs := runBinary(t, bin, "check", "--data-dir", data, "--module", broken, "--module", notPlugin, "--module", hello)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
		}
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if len(lines) != 3 {
			t.Fatalf("stderr has %d lines, want one per problem and a summary:\n%s", len(lines), errs)
		}
		if !strings.Contains(lines[0], broken) || !strings.Contains(lines[0], "syntax error") {
			t.Errorf("broken Lua: %q", lines[0])
		}
		if !strings.Contains(lines[1], notPlugin) || !strings.Contains(lines[1], "no plugin handshake") {
			t.Errorf("plugin that will not start: %q", lines[1])
		}
		if !strings.Contains(lines[2], "2 problem(s)") {
			t.Errorf("summary: %q", lines[2])
		}
		if !strings.Contains(out, "module "+hello+": ok") {
			t.Errorf("the good module is not reported ok:\n%s", out)
		}
	})
	t.Run("the shipped deployment configs", func(t *testing.T) {
		// deploy/docker/config.toml, and the config of the Agones ConfigMap.
		docker, _ := filepath.Abs("../../deploy/docker/config.toml")
		manifest, err := os.ReadFile("../../deploy/agones/gameserver.yaml")
		if err != nil {
			t.Fatal(err)
		}
		_, toml, ok := strings.Cut(string(manifest), "agones.toml: |\n")
		if !ok {
			t.Fatal("gameserver.yaml has no agones.toml in its ConfigMap")
		}
		var body strings.Builder
		for _, line := range strings.Split(toml, "\n") {
			if !strings.HasPrefix(line, "    ") {
				break
			}
			body.WriteString(strings.TrimPrefix(line, "    ") + "\n")
		}
		agones := write("agones.toml", body.String(), 0o644)
		for _, cfg := range []string{docker, agones} {
			if code, out, errs := runBinary(t, bin, "check", "--config", cfg, "--data-dir", data); code != 0 {
				t.Errorf("%s: exit %d\n%s%s", cfg, code, out, errs)
			}
		}
	})
	t.Run("room modes", func(t *testing.T) {
		code, out, errs := runBinary(t, bin, "check", "--data-dir", data, "--rooms", "--mode", "deathmatch", "--mode", hello, "--mode", broken)
		if code != 1 || !strings.Contains(out, "module deathmatch: ok: deathmatch") || !strings.Contains(out, "module "+hello+": ok: hello") ||
			!strings.Contains(errs, broken) || !strings.Contains(errs, "1 problem(s)") {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		if code, out, errs := runBinary(t, bin, "check", "--rooms"); code != 1 || !strings.Contains(errs, "rooms.modes = []: must name at least one module") {
			t.Fatalf("--rooms without a mode: exit %d\n%s%s", code, out, errs)
		}
	})
	t.Run("bad config key", func(t *testing.T) {
		code, out, errs := runBinary(t, bin, "check", "--config", badKey)
		want := "sparkhost check: " + badKey + `:3: unknown key "server.colour"`
		if code != 1 || !strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("exit %d, stderr %q, want one line starting %q (stdout %q)", code, errs, want, out)
		}
	})
}

func TestVersion(t *testing.T) {
	bin := buildBinary(t)
	code, out, errs := runBinary(t, bin, "version")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"sparkhost " + defaultVersion, "module github.com/sparkhost/sparkhost", "revision ", "go " + runtime.Version()} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
}
