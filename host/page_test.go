package host_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// findChromium returns Debian's Chromium (or another Chrome) or "".
func findChromium() string {
	if p := os.Getenv("SPARK_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifactDir is where the test keeps its screenshot:
// $SPARK_TEST_ARTIFACTS if set, else a temporary directory.
func artifactDir(t *testing.T) string {
	if d := os.Getenv("SPARK_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// TestStatusPageInChromium opens the status page in headless Chromium while
// two real UDP clients play, and checks that the plots render, that the
// page's numbers are the server's, and that everything came from the server
// itself. It keeps a screenshot (status-page.png in artifactDir).
func TestStatusPageInChromium(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		t.Skip("no Chromium found (apt-get install chromium, as .ci/run does; or set SPARK_CHROMIUM): the status page is not tested in a browser")
	}
	srv, _ := startHost(t, withOps, echoSpec(nil))
	alice := dialAs(t, srv, "alice", echoRegistry())
	bob := dialAs(t, srv, "bob", echoRegistry())
	eventually(t, "two players", func() bool { return srv.Stats().Players == 2 })

	// Traffic while the page watches: bounded, stops with the test.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < 3000; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			alice.Send(echoSchema.ID, wire.Reliable, []byte{byte(i)})
			bob.Send(echoSchema.ID, wire.Reliable, []byte{byte(i)})
		}
	})
	t.Cleanup(func() { close(stop); wg.Wait() })

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1100))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	origin := strings.TrimSuffix(opsURL(t, srv, "/"), "/")
	if err := chromedp.Do(bctx, chromedp.Navigate(origin+"/")); err != nil {
		t.Fatalf("opening the page in %s: %v", browser, err)
	}
	// Plots need samples: wait until the page has refreshed a few times and
	// the history holds at least four seconds.
	var refreshed, points int
	for deadline := time.Now().Add(30 * time.Second); ; {
		var err error
		if refreshed, err = chromedp.Run(bctx, chromedp.Evaluate[int](`Number(document.body.dataset.refreshed||0)`)); err != nil {
			t.Fatal(err)
		}
		if points, err = chromedp.Run(bctx, chromedp.Evaluate[int](`Number(document.getElementById("plot-tick").dataset.points||0)`)); err != nil {
			t.Fatal(err)
		}
		if refreshed >= 3 && points >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page refreshed %d times with %d samples in 30 s", refreshed, points)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Every plot drew its series: count the pixels of each canvas in a
	// series colour (--c0 #2f6fd1, --c1 #d1552f), not the grid or the text.
	painted, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]int](`(() => {
		const near = (d, i, r, g, b) => Math.abs(d[i]-r) < 40 && Math.abs(d[i+1]-g) < 40 && Math.abs(d[i+2]-b) < 40 && d[i+3] > 128;
		const out = {};
		for (const c of document.querySelectorAll("canvas")) {
			const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
			let n = 0;
			for (let i = 0; i < d.length; i += 4) if (near(d, i, 47, 111, 209) || near(d, i, 209, 85, 47)) n++;
			out[c.id] = n;
		}
		return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"plot-tick", "plot-players", "plot-bandwidth", "plot-drops"} {
		if painted[id] < 10 {
			t.Errorf("%s has %d pixels of its series: no line drawn", id, painted[id])
		}
	}

	// The page's numbers are the server's.
	type pageFacts struct {
		Name, Players, Max, Ticks, Map string
		PlayerNames                    []string
		SendRates, QueueDelays         []string // congestion control's columns, per player
		ModuleState                    string
		Resources                      []string
	}
	page, err := chromedp.Run(bctx, chromedp.Evaluate[pageFacts](`(() => ({
		Name: document.getElementById("name").textContent,
		Players: document.getElementById("players").textContent,
		Max: document.getElementById("max-players").textContent,
		Ticks: document.getElementById("ticks").textContent,
		Map: document.getElementById("map").textContent,
		PlayerNames: [...document.querySelectorAll("#player-rows [data-field=name]")].map((e) => e.textContent),
		SendRates: [...document.querySelectorAll("#player-rows [data-field=send_rate]")].map((e) => e.textContent),
		QueueDelays: [...document.querySelectorAll("#player-rows [data-field=queue_delay]")].map((e) => e.textContent),
		ModuleState: (document.querySelector("#module-rows tr[data-module=echo] [data-field=state]") || {}).textContent || "",
		Resources: performance.getEntriesByType("resource").map((r) => r.name),
	}))()`))
	if err != nil {
		t.Fatal(err)
	}
	st := srv.Stats()
	if page.Name != "sparkhost" || page.Map != st.Map {
		t.Errorf("page shows %q on %q, server is %q on %q", page.Name, page.Map, "sparkhost", st.Map)
	}
	if page.Players != strconv.Itoa(st.Players) || page.Max != strconv.Itoa(st.MaxPlayers) {
		t.Errorf("page shows %s/%s players, server has %d/%d", page.Players, page.Max, st.Players, st.MaxPlayers)
	}
	if n, err := strconv.ParseUint(page.Ticks, 10, 64); err != nil || n == 0 || n > st.Ticks {
		t.Errorf("page shows %q ticks, server has run %d", page.Ticks, st.Ticks)
	}
	slices.Sort(page.PlayerNames)
	if !slices.Equal(page.PlayerNames, []string{"alice", "bob"}) {
		t.Errorf("players table lists %q", page.PlayerNames)
	}
	// Both players are v4 sessions, paced: a send rate in kB/s (not "–")
	// and a send-queue delay in ms, not marked backlogged on loopback.
	if len(page.SendRates) != 2 || len(page.QueueDelays) != 2 {
		t.Errorf("players table has send rates %q and send-queue delays %q; want one each per player", page.SendRates, page.QueueDelays)
	}
	for i := range page.SendRates {
		if _, err := strconv.ParseFloat(page.SendRates[i], 64); err != nil || strings.Contains(page.QueueDelays[i], "backlogged") {
			t.Errorf("player %d: send rate %q, send-queue delay %q", i, page.SendRates[i], page.QueueDelays[i])
		}
	}
	if page.ModuleState != "running" {
		t.Errorf("modules table shows echo %q", page.ModuleState)
	}
	for _, r := range page.Resources {
		if !strings.HasPrefix(r, origin+"/") {
			t.Errorf("the page loaded %s from elsewhere: it must work offline", r)
		}
	}

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(artifactDir(t), "status-page.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
}
