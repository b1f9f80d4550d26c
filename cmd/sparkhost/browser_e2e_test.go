package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserScenario is the browser client's scenario (handshake, chat,
// rooms with a password, a fragmented module message, a 10 s session, a
// forced close and reconnect), run inside the game page.
//
//go:embed testdata/browser_scenario.js
var browserScenario string

// chromium returns Debian's Chromium, or skips the test without it, unless
// SPARK_REQUIRE_BROWSER is set (.ci/run sets it once chromium is
// installed), when a missing browser fails it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SPARK_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SPARK_REQUIRE_BROWSER") != "" {
		t.Fatal("SPARK_REQUIRE_BROWSER is set but no Chromium was found (apt-get install chromium)")
	}
	t.Skip("no Chromium found (apt-get install chromium, as .ci/run does; or set SPARK_CHROMIUM): the browser client is not tested in a browser")
	return ""
}

// browser starts headless Chromium as this machine runs it (as root: no
// sandbox; no background networking). QUIC stays on: WebTransport needs
// it. WebTransport to 127.0.0.1 by serverCertificateHashes needs no flag.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	actx, cancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1000, 900))
	t.Cleanup(cancel)
	return actx
}

// startWebGame runs `sparkhost run` with [web] and rooms offering tagarena.
func startWebGame(t *testing.T, bin string) *runningServer {
	t.Helper()
	tmp := shortTempDir(t)
	cfg := filepath.Join(tmp, "config.toml")
	if err := os.WriteFile(cfg, []byte(webConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	mode, err := filepath.Abs("../../scripts/tagarena.lua")
	if err != nil {
		t.Fatal(err)
	}
	return startServerWeb(t, bin, "", filepath.Join(tmp, "data"), true, "--config", cfg, "--rooms", "--mode", mode)
}

type scenarioResult struct {
	Steps              []string `json:"steps"`
	Error              string   `json:"error"`
	Transports         []string `json:"transports"`
	Pins               []string `json:"pins"`
	Crypto             string   `json:"crypto"`
	Chat               string   `json:"chat"`
	CreateCode         int      `json:"createCode"`
	ListedWithPassword bool     `json:"listedWithPassword"`
	WrongPasswordCode  int      `json:"wrongPasswordCode"`
	JoinCode           int      `json:"joinCode"`
	Names              []string `json:"names"`
	FragmentEchoed     bool     `json:"fragmentEchoed"`
	Session            struct {
		Seconds                         float64
		Worlds, EchoesSent, Echoes      int
		MessagesSent, DatagramsSent     int
		DatagramsReceived               int
		SecurityDrops, MalformedDropped int
		PingMs                          float64
	} `json:"session"`
	AliceClosed string `json:"aliceClosed"`
	RejoinCode  int    `json:"rejoinCode"`
	Reconnected bool   `json:"reconnected"`
}

// TestBrowserClient: in headless Chromium, the browser client (the game
// page's bundle) connects to a real `sparkhost run` over WebTransport and
// over WebSocket and goes through the scenario: handshake with the pin,
// chat, a room with a password, a fragmented module message, ten seconds of
// packed traffic, a forced close and a reconnect.
func TestBrowserClient(t *testing.T) {
	chromium(t)
	bin := buildBinary(t)
	for _, kind := range []string{"webtransport", "websocket"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rs := startWebGame(t, bin)
			bctx, cancelTab := chromedp.NewContext(browser(t, ctx))
			defer cancelTab()
			origin := fmt.Sprintf("http://127.0.0.1:%d", rs.webPort)
			if err := chromedp.Do(bctx, chromedp.Navigate(origin+"/")); err != nil {
				t.Fatalf("opening the game page: %v", err)
			}
			script := strings.NewReplacer("KIND", jsString(kind), "PIN", jsString(rs.pin)).Replace(browserScenario)
			raw, err := chromedp.Run(bctx, chromedp.Evaluate[json.RawMessage](script, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("the scenario: %v", err)
			}
			var r scenarioResult
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatalf("the scenario's result %s: %v", raw, err)
			}
			t.Logf("%s: %s", kind, raw)
			checkScenario(t, kind, rs.pin, &r)
		})
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func checkScenario(t *testing.T, kind, pin string, r *scenarioResult) {
	t.Helper()
	if r.Error != "" {
		t.Fatalf("the scenario failed after %v: %s", r.Steps, r.Error)
	}
	if len(r.Transports) != 2 || r.Transports[0] != kind || r.Transports[1] != kind {
		t.Errorf("transports %v, want %s", r.Transports, kind)
	}
	if len(r.Pins) != 2 || r.Pins[0] != pin || r.Pins[1] != pin {
		t.Errorf("pins %v, want the console's %s", r.Pins, pin)
	}
	if r.Chat != "alice: hello from alice" {
		t.Errorf("chat %q", r.Chat)
	}
	if r.CreateCode != 0 || !r.ListedWithPassword || r.WrongPasswordCode != 4 || r.JoinCode != 0 {
		t.Errorf("rooms: create %d, listed with password %v, wrong password %d (want 4 WrongPassword), join %d",
			r.CreateCode, r.ListedWithPassword, r.WrongPasswordCode, r.JoinCode)
	}
	if !hasAll(r.Names, "alice", "bob", "bot 1") {
		t.Errorf("the room's names %v, want alice, bob and the bots", r.Names)
	}
	if !r.FragmentEchoed {
		t.Error("the 3,000-byte module message did not come back whole")
	}
	s := r.Session
	if s.Seconds < 10 || s.Worlds < 50 || s.Echoes != s.EchoesSent || s.EchoesSent < 50 {
		t.Errorf("session: %.1f s, %d worlds (want ≥ 50), %d of %d echoes", s.Seconds, s.Worlds, s.Echoes, s.EchoesSent)
	}
	if s.MessagesSent <= s.DatagramsSent {
		t.Errorf("no packing: %d messages in %d datagrams", s.MessagesSent, s.DatagramsSent)
	}
	if s.SecurityDrops != 0 || s.MalformedDropped != 0 || s.PingMs < 0 {
		t.Errorf("session: %d security drops, %d malformed, ping %v ms", s.SecurityDrops, s.MalformedDropped, s.PingMs)
	}
	if r.RejoinCode != 0 || !r.Reconnected {
		t.Errorf("after the forced close (%s): rejoin %d, reconnected %v", r.AliceClosed, r.RejoinCode, r.Reconnected)
	}
}

func hasAll(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, v := range list {
			found = found || v == w
		}
		if !found {
			return false
		}
	}
	return true
}

var _ = bytes.NewReader
var _ image.Image
var _ = png.Decode
