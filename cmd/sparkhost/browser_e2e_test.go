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

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
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
func browser(t *testing.T, ctx context.Context, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1000, 900)}, extra...)
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
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
	MaxDatagram        int      `json:"maxDatagram"`
	HandshakeCrypto    string   `json:"handshakeCrypto"`
	Fallback           string   `json:"fallback"`
	Secure             bool     `json:"secure"`
	WrongPin           string   `json:"wrongPin"`
	Chat               string   `json:"chat"`
	CreateCode         int      `json:"createCode"`
	ListedWithPassword bool     `json:"listedWithPassword"`
	WrongPasswordCode  int      `json:"wrongPasswordCode"`
	JoinCode           int      `json:"joinCode"`
	Names              []string `json:"names"`
	FragmentEchoed     bool     `json:"fragmentEchoed"`
	OverflowEchoed     bool     `json:"overflowEchoed"`
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
// over WebSocket and goes through the scenario: handshake with the pin (and
// a wrong pin refused), chat, a room with a password, a fragmented module
// message, over WebTransport datagrams through the overflow stream, ten
// seconds of packed traffic, a forced close and a reconnect. The third
// case opens the page from an origin that is not a secure context
// (http://game.test, mapped to 127.0.0.1): the browser has no WebTransport
// and no crypto.subtle there, and the client falls back to WebSocket and
// the noble primitives.
func TestBrowserClient(t *testing.T) {
	chromium(t)
	bin := buildBinary(t)
	for _, c := range []struct{ name, prefer, expect, host string }{
		{"webtransport", "webtransport", "webtransport", "127.0.0.1"},
		{"websocket", "websocket", "websocket", "127.0.0.1"},
		{"insecure-origin", "auto", "websocket", "game.test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rs := startWebGame(t, bin)
			bctx, cancelTab := chromedp.NewContext(browser(t, ctx, chromedp.Flag("host-resolver-rules", "MAP game.test 127.0.0.1")))
			defer cancelTab()
			origin := fmt.Sprintf("http://%s:%d", c.host, rs.webPort)
			if err := chromedp.Do(bctx, chromedp.Navigate(origin+"/")); err != nil {
				t.Fatalf("opening the game page: %v", err)
			}
			script := strings.NewReplacer("__PREFER__", jsString(c.prefer), "__EXPECT__", jsString(c.expect), "__PIN__", jsString(rs.pin)).Replace(browserScenario)
			raw, err := chromedp.Run(bctx, chromedp.Evaluate[json.RawMessage](script, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("the scenario: %v", err)
			}
			var r scenarioResult
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatalf("the scenario's result %s: %v", raw, err)
			}
			t.Logf("%s: %s", c.name, raw)
			checkScenario(t, c.expect, rs.pin, &r)
			secure := c.host == "127.0.0.1"
			if r.Secure != secure {
				t.Errorf("secure context %v, want %v", r.Secure, secure)
			}
			// Chromium's WebCrypto has X25519 and Ed25519: a secure page's
			// handshake uses it; elsewhere there is no crypto.subtle.
			want := "async: X25519 SHA-256 Ed25519 HKDF HMAC"
			if !secure {
				want = "sync"
				if !strings.Contains(r.Fallback, "no WebTransport") {
					t.Errorf("fallback reason %q", r.Fallback)
				}
			}
			if r.HandshakeCrypto != want {
				t.Errorf("handshake crypto %q, want %q", r.HandshakeCrypto, want)
			}
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
	if r.WrongPin != "ServerIdentityMismatch" {
		t.Errorf("a wrong pin: %q, want ServerIdentityMismatch", r.WrongPin)
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
	if kind == "webtransport" && (!r.OverflowEchoed || r.MaxDatagram < 1000 || r.MaxDatagram >= 1400) {
		t.Errorf("overflow stream: 1,400-byte datagrams over a %d-byte WebTransport maximum: echoed %v", r.MaxDatagram, r.OverflowEchoed)
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

// gamePlayer is one browser player of the game page: a tab that entered a
// name and pressed Play.
func gamePlayer(t *testing.T, parent context.Context, origin, name string) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(parent)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab, chromedp.Navigate(origin+"/")); err != nil {
		t.Fatalf("%s opens the page: %v", name, err)
	}
	if err := chromedp.Do(tab, chromedp.SendKeys("#name-input", name)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Click("#play")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, tab, name+" in the lobby", `sparkGame.phase === "lobby"`)
	return tab
}

// waitPage polls a JavaScript condition in the page for up to 20 s.
func waitPage(t *testing.T, tab context.Context, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](cond))
		if err == nil && ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	log, _ := chromedp.Run(tab, chromedp.Evaluate[[]string](`sparkGame.log`))
	t.Fatalf("%s: not within 20 s (the page's log: %q)", what, log)
}

type pageFacts struct {
	Transport string   `json:"transport"`
	Status    string   `json:"status"`
	Players   []string `json:"players"`
}

const pageFactsJS = `({transport: sparkGame.transport, status: document.getElementById("status").textContent,
  players: [...document.querySelectorAll("#players li")].map((li) => li.textContent)})`

// TestBrowserGamePage: two players open the game page in Chromium, enter
// their names, one creates a room from the lobby and the other joins it
// from the list, and both play tagarena against the bots. The screenshot
// of the first player's page (game-page.png in SPARK_TEST_ARTIFACTS or a
// temporary directory) has a drawn field with every player on it, and the
// page lists the players and shows the transport and the ping.
func TestBrowserGamePage(t *testing.T) {
	chromium(t)
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs := startWebGame(t, bin)
	origin := fmt.Sprintf("http://127.0.0.1:%d", rs.webPort)
	first, cancelFirst := chromedp.NewContext(browser(t, ctx))
	defer cancelFirst()
	// The browser starts with this first tab; each player is a new tab of it.
	if err := chromedp.Do(first, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	// Both in the lobby first: bob's list learns of alice's room by a RoomUpdate.
	alice := gamePlayer(t, first, origin, "alice")
	bob := gamePlayer(t, first, origin, "bob")
	if err := chromedp.Do(alice, chromedp.SendKeys("#room-name", "arena")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(alice, chromedp.Click("#create")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, alice, "alice in her room", `sparkGame.phase === "room"`)
	waitPage(t, bob, "the room in bob's list", `document.querySelectorAll("#rooms button").length > 0`)
	if err := chromedp.Do(bob, chromedp.Click("#rooms button")); err != nil {
		t.Fatal(err)
	}
	both := `(() => { const n = sparkGame.players.map((p) => p.name); return ["alice", "bob", "bot 1", "bot 2", "bot 3"].every((w) => n.includes(w)); })()`
	waitPage(t, bob, "bob sees everyone", both)
	waitPage(t, alice, "alice sees everyone", both)
	// A background tab draws no frames (requestAnimationFrame): alice's to the front.
	if _, err := chromedp.Call(alice, page.BringToFront, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // a few frames drawn with everyone
	facts, err := chromedp.Run(alice, chromedp.Evaluate[pageFacts](pageFactsJS))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("alice's page: %+v", facts)
	if facts.Transport != "webtransport" && facts.Transport != "websocket" {
		t.Errorf("transport %q", facts.Transport)
	}
	if !strings.HasPrefix(facts.Status, facts.Transport+" · ping ") || !strings.HasSuffix(facts.Status, " ms") {
		t.Errorf("status %q: want the transport and the ping in ms", facts.Status)
	}
	listed := strings.Join(facts.Players, "\n")
	for _, w := range []string{"alice", "bob", "bot 1 (bot)", "bot 2 (bot)", "bot 3 (bot)", "(you)", "IT"} {
		if !strings.Contains(listed, w) {
			t.Errorf("the players list %q lacks %q", facts.Players, w)
		}
	}
	shot, err := chromedp.Run(alice, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(browserArtifacts(t), "game-page.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	field, err := chromedp.Run(alice, chromedp.Screenshot("#field"))
	if err != nil {
		t.Fatal(err)
	}
	checkField(t, field)
}

// checkField checks the canvas's screenshot: the field's green, and the
// colours of a player (alice herself, blue), another player (bob, yellow),
// the bots (grey) and "it" (red), each drawn as a disc of many pixels.
func checkField(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]uint8{"field": {0x16, 0x32, 0x1c}, "me": {0x42, 0xa5, 0xf5}, "other player": {0xff, 0xca, 0x28}, "bot": {0xbd, 0xbd, 0xbd}, "it": {0xe5, 0x39, 0x35}}
	counts := map[string]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			for name, c := range want {
				if near(img, x, y, c) {
					counts[name]++
				}
			}
		}
	}
	t.Logf("canvas pixels by colour: %v of %d", counts, b.Dx()*b.Dy())
	if counts["field"] < b.Dx()*b.Dy()/2 {
		t.Errorf("the field is not drawn: %d green pixels of %d", counts["field"], b.Dx()*b.Dy())
	}
	// "it" is one of them, drawn red instead of its own colour: three of
	// the four others' colours are enough, and red must be there.
	seen := 0
	for _, name := range []string{"me", "other player", "bot"} {
		if counts[name] >= 100 {
			seen++
		}
	}
	if counts["it"] < 100 || seen < 2 || counts["bot"] < 100 {
		t.Errorf("players not drawn: %v", counts)
	}
}

func near(img image.Image, x, y int, c [3]uint8) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	d := func(v uint32, w uint8) bool { return int(v>>8)-int(w) < 8 && int(w)-int(v>>8) < 8 }
	return d(r, c[0]) && d(g, c[1]) && d(b, c[2])
}

// browserArtifacts is where the game page's screenshot is kept:
// $SPARK_TEST_ARTIFACTS if set, else a temporary directory.
func browserArtifacts(t *testing.T) string {
	if d := os.Getenv("SPARK_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}
