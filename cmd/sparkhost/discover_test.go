package main

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/host/discovery"
)

// Every discover run in these tests names its --target on 127.0.0.1 (or
// relies on the default, this machine): --broadcast adds the limited
// broadcast, which tests never send to.

func startDiscoveryResponder(t *testing.T, bind string, info discovery.Info) netip.AddrPort {
	t.Helper()
	r, err := discovery.Listen(discovery.ResponderConfig{
		Bind:   bind,
		Info:   func() discovery.Info { return info },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r.Addr()
}

func runDiscover(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = discover(args, &out, &errb)
	return code, out.String(), errb.String()
}

// columns splits a table line on runs of two or more spaces.
var columnGap = regexp.MustCompile(` {2,}`)

func columns(line string) []string { return columnGap.Split(strings.TrimRight(line, " "), -1) }

func TestDiscoverCommandListsServers(t *testing.T) {
	a := startDiscoveryResponder(t, "127.0.0.1", discovery.Info{Name: "Zulu Base", Map: "dust", Mode: 0,
		Players: 3, MaxPlayers: 16, GamePort: 27015, ProtocolVersion: 3})
	b := startDiscoveryResponder(t, "127.0.0.1", discovery.Info{Name: "Alpha", Mode: 6,
		Players: 0, MaxPlayers: 8, GamePort: 27020, ProtocolVersion: 5})
	code, out, errOut := runDiscover(t, "--target", a.String(), "--target", b.String(), "--wait", "500ms")
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	want := [][]string{
		{"NAME", "MAP", "MODE", "PLAYERS", "ADDRESS"},
		{"Alpha", "-", "Custom", "0/8", "127.0.0.1:27020"},
		{"Zulu Base", "dust", "Deathmatch", "3/16", "127.0.0.1:27015"},
	}
	if len(lines) != len(want) {
		t.Fatalf("output:\n%s", out)
	}
	for i, line := range lines {
		if got := columns(line); strings.Join(got, "|") != strings.Join(want[i], "|") {
			t.Errorf("line %d = %q, want columns %q", i, line, want[i])
		}
	}
	if !strings.Contains(errOut, "Alpha at 127.0.0.1 speaks protocol v5") || strings.Contains(errOut, "Zulu") {
		t.Errorf("no protocol note on stderr: %q", errOut)
	}
}

func TestDiscoverCommandNoServers(t *testing.T) {
	// An open socket that never answers, on a port given without --port.
	silent, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	port := silent.LocalAddr().(*net.UDPAddr).Port
	code, out, errOut := runDiscover(t, "--target", "127.0.0.1", "--port", strconv.Itoa(port), "--wait", "100ms")
	if code != 0 || out != "no servers found\n" || errOut != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestDiscoverCommandUsage(t *testing.T) {
	code, out, _ := runDiscover(t, "--help")
	if code != 0 || !strings.HasPrefix(out, "usage: sparkhost discover") {
		t.Fatalf("--help: exit %d, %q", code, out)
	}
	const target = "127.0.0.1:9" // never reached: every case fails before sending
	bad := [][]string{
		{"--target", target, "--bogus"},
		{"--target", target, "extra"},
		{"--target", target, "--port", "0"},
		{"--target", target, "--port", "70000"},
		{"--target", target, "--wait", "1ms"},
		{"--target", target, "--wait", "1h"},
		{"--target", "localhost"},
		{"--target", "::1"},
		{"--target", "0.0.0.0:27016"},
		{"--target", "224.0.0.1"},
		{"--target", "127.0.0.1:0"},
	}
	for _, args := range bad {
		code, out, errOut := runDiscover(t, args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "sparkhost discover: ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a usage error", args, code, out, errOut)
		}
	}
}

func TestDiscoverCommandTargets(t *testing.T) {
	got, err := parseTargets(nil, 27016, false)
	if err != nil || joinTargets(got) != "127.0.0.1:27016" {
		t.Fatalf("default targets %v, %v: want this machine only", got, err)
	}
	got, err = parseTargets(nil, 27016, true)
	if err != nil || joinTargets(got) != "255.255.255.255:27016" {
		t.Fatalf("--broadcast targets %v, %v", got, err)
	}
	got, err = parseTargets([]string{"127.0.0.2"}, 27016, true)
	if err != nil || joinTargets(got) != "255.255.255.255:27016, 127.0.0.2:27016" {
		t.Fatalf("--broadcast --target targets %v, %v", got, err)
	}
	got, err = parseTargets([]string{"127.0.0.2", "192.168.1.255:4000"}, 5000, false)
	if err != nil || joinTargets(got) != "127.0.0.2:5000, 192.168.1.255:4000" {
		t.Fatalf("targets %v, %v", got, err)
	}
	if kept := withoutBroadcast([]netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1"),
		netip.AddrPortFrom(discovery.LimitedBroadcast, 1)}); joinTargets(kept) != "127.0.0.1:1" {
		t.Fatalf("withoutBroadcast kept %v", kept)
	}
}
