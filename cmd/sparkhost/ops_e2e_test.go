package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMMOMetricsOverHTTP runs `sparkhost run --module mmo` with the ops
// listener on, plays a registration, a failed login and a login with a
// character entering the world, and reads the mmo module's own metrics —
// reported by the plugin process through the plugin protocol — from
// /metrics; `sparkhost health` answers for the same listener.
func TestMMOMetricsOverHTTP(t *testing.T) {
	bin := buildBinary(t)
	tmp := shortTempDir(t)
	cfg := filepath.Join(tmp, "ops.toml")
	if err := os.WriteFile(cfg, []byte("[ops]\nlisten = \"127.0.0.1:0\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(tmp, "data")
	_, stdout := startCommand(t, bin, "", "run", "--config", cfg, "--port", "0", "--data-dir", dataDir, "--module", "mmo")
	var addr, pin, opsAddr string
	sc := bufio.NewScanner(stdout)
	for opsAddr == "" && sc.Scan() {
		l := sc.Text()
		if a, ok := strings.CutPrefix(l, "sparkhost listening on "); ok {
			addr = a
		}
		if p, ok := strings.CutPrefix(l, "server identity pin: "); ok {
			pin = p
		}
		if u, ok := strings.CutPrefix(l, "status page, metrics and probes on http://"); ok {
			opsAddr = strings.TrimSuffix(u, "/")
		}
	}
	if opsAddr == "" || addr == "" || pin == "" {
		t.Fatalf("the server did not print its addresses (game %q, ops %q)", addr, opsAddr)
	}
	go io.Copy(io.Discard, stdout)

	conn := "connect " + addr + " alice; "
	dir := filepath.Join(tmp, "client")
	runScript(t, bin, dir, pin, conn+"mmo_session_register alice pw-alice", 0, "registered alice")
	runScript(t, bin, dir, pin, conn+"mmo_session_login alice wrong", 1, "AuthFailed")
	c := startClient(t, bin, dir, pin, conn+"mmo_session_login alice pw-alice; mmo_session_create Alice; mmo_session_enter Alice; sleep 30s")

	want := map[string]float64{
		"sparkhost_mmo_registrations_total":  1,
		"sparkhost_mmo_login_failures_total": 1,
		"sparkhost_mmo_logins_total":         1,
		"sparkhost_mmo_characters_in_world":  1,
		"sparkhost_mmo_accounts_online":      1,
		"sparkhost_mmo_throttled_total":      0,
		"sparkhost_players":                  1,
	}
	var got map[string]float64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got = scrapeValues(t, "http://"+opsAddr+"/metrics")
		same := true
		for k, v := range want {
			same = same && got[k] == v
		}
		if same {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never reached %v; last %v\n%s", want, got, c.output())
		}
	}
	if got["sparkhost_module_state{module=mmo,state=running}"] != 1 {
		t.Errorf("module_state of mmo: %v", got)
	}
	if code, out, errs := runBinary(t, bin, "health", "--addr", opsAddr); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Errorf("sparkhost health: exit %d, %q %q", code, out, errs)
	}
	if code, out, _ := runBinary(t, bin, "health", "--addr", opsAddr, "--path", "/readyz"); code != 0 || !strings.HasPrefix(out, "ready: ") {
		t.Errorf("sparkhost health --path /readyz: exit %d, %q", code, out)
	}
}

// scrapeValues reads /metrics into name{label=value,...} → value.
func scrapeValues(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			key := name
			if len(m.GetLabel()) > 0 {
				var ls []string
				for _, l := range m.GetLabel() {
					ls = append(ls, l.GetName()+"="+l.GetValue())
				}
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
