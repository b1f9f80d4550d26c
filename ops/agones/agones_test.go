package agones_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/ops/agones"
)

// sidecar is a stand-in for the Agones SDK server's HTTP gateway on
// 127.0.0.1: it records every call and can refuse the first ones, as a
// sidecar that is still starting does.
type sidecar struct {
	mu      sync.Mutex
	calls   []string // "POST /ready", "PUT /metadata/label map=arena"
	refuse  int      // answer 503 to this many calls first
	refused int
	srv     *httptest.Server
}

func newSidecar(t *testing.T, refuse int) *sidecar {
	s := &sidecar{refuse: refuse}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.refused < s.refuse {
			s.refused++
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		call := r.Method + " " + r.URL.Path
		if strings.HasPrefix(r.URL.Path, "/metadata/") {
			var kv struct{ Key, Value string }
			if err := json.Unmarshal(body, &kv); err != nil {
				t.Errorf("label body %q: %v", body, err)
			}
			call += " " + kv.Key + "=" + kv.Value
		} else if string(body) != "{}" {
			t.Errorf("%s body %q, want {}", call, body)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s Content-Type %q", call, ct)
		}
		s.calls = append(s.calls, call)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sidecar) port(t *testing.T) int {
	u, _ := url.Parse(s.srv.URL)
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (s *sidecar) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func count(calls []string, want string) int {
	n := 0
	for _, c := range calls {
		if c == want {
			n++
		}
	}
	return n
}

func TestRetriesWhileTheSidecarStarts(t *testing.T) {
	sc := newSidecar(t, 3)
	a := agones.Start(agones.Config{Port: sc.port(t), HealthInterval: time.Millisecond, Log: slog.New(slog.DiscardHandler)})
	defer a.Close()
	a.SetAnnotation("pin", "ed25519:AAAA")
	a.Tick(time.Now()) // a ping asked for before Ready waits for it
	a.Ready()
	eventually(t, "the annotation, Ready and a health ping", func() bool {
		c := sc.Calls()
		return len(c) >= 3
	})
	c := sc.Calls()
	if c[0] != "PUT /metadata/annotation pin=ed25519:AAAA" || c[1] != "POST /ready" || c[2] != "POST /health" {
		t.Errorf("calls %q, want the annotation (set before Ready: sent first, so an allocator sees it), Ready, then Health", c)
	}
	a.SetLabel("mode", "deathmatch")
	eventually(t, "the label", func() bool { return count(sc.Calls(), "PUT /metadata/label mode=deathmatch") == 1 })
	if sc.refused != 3 {
		t.Errorf("the sidecar refused %d calls, want 3 (retried)", sc.refused)
	}
	a.Shutdown()
	a.Shutdown() // once only
	eventually(t, "Shutdown", func() bool { return count(sc.Calls(), "POST /shutdown") == 1 })
}

func TestPortFromTheEnvironment(t *testing.T) {
	a := agones.Start(agones.Config{Getenv: func(k string) string {
		if k == agones.PortEnv {
			return "19358"
		}
		return ""
	}, Log: slog.New(slog.DiscardHandler)})
	defer a.Close()
	if a.Port() != 19358 {
		t.Errorf("port %d, want 19358 from %s", a.Port(), agones.PortEnv)
	}
	b := agones.Start(agones.Config{Getenv: func(string) string { return "" }, Log: slog.New(slog.DiscardHandler)})
	defer b.Close()
	if b.Port() != agones.DefaultPort {
		t.Errorf("port %d, want the default %d", b.Port(), agones.DefaultPort)
	}
}

func TestLabelValue(t *testing.T) {
	for in, want := range map[string]string{
		"arena": "arena", "Dust 2": "Dust_2", "-x-": "x", "": "none", "ünï": "n",
		"a23456789012345678901234567890123456789012345678901234567890123456789": "a23456789012345678901234567890123456789012345678901234567890123",
	} {
		if got := agones.LabelValue(in); got != want {
			t.Errorf("LabelValue(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCloseSendsAPendingShutdown: a Shutdown asked for just before Close
// (a drain that ended, then the server stops) still reaches the sidecar.
func TestCloseSendsAPendingShutdown(t *testing.T) {
	sc := newSidecar(t, 0)
	a := agones.Start(agones.Config{Port: sc.port(t), Log: slog.New(slog.DiscardHandler)})
	a.Ready()
	eventually(t, "Ready", func() bool { return count(sc.Calls(), "POST /ready") == 1 })
	a.Shutdown()
	a.Close()
	if n := count(sc.Calls(), "POST /shutdown"); n != 1 {
		t.Fatalf("%d Shutdown calls after Shutdown then Close, want 1: %q", n, sc.Calls())
	}
}
