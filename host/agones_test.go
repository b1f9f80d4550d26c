package host_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// agonesSidecar stands in for the Agones SDK server's HTTP gateway on
// 127.0.0.1 and records the calls it gets, in order.
type agonesSidecar struct {
	mu    sync.Mutex
	calls []string
	srv   *httptest.Server
}

func newAgonesSidecar(t *testing.T) *agonesSidecar {
	s := &agonesSidecar{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		call := r.Method + " " + r.URL.Path
		if strings.HasPrefix(r.URL.Path, "/metadata/") {
			call += " " + string(body)
		}
		s.mu.Lock()
		s.calls = append(s.calls, call)
		s.mu.Unlock()
		io.WriteString(w, "{}")
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *agonesSidecar) port() int {
	u, _ := url.Parse(s.srv.URL)
	p, _ := strconv.Atoi(u.Port())
	return p
}

func (s *agonesSidecar) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func (s *agonesSidecar) count(prefix string) int {
	n := 0
	for _, c := range s.snapshot() {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// TestAgonesLifecycle runs a real server with the adapter on against the
// stand-in: Ready once it serves, labels for map and mode, health pings from
// the tick loop that stop while the tick loop is stuck and resume after, and
// Shutdown when the match ends.
func TestAgonesLifecycle(t *testing.T) {
	sc := newAgonesSidecar(t)
	var stall atomic.Pointer[chan struct{}]
	srv, _ := startHost(t, func(c *config.Config) {
		c.Agones.Enabled, c.Agones.SDKPort, c.Agones.HealthSeconds, c.Agones.ShutdownOnMatchEnd = true, sc.port(), 0.1, true
	}, echoSpec(&stall))
	release := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	t.Cleanup(let)

	eventually(t, "Ready and health pings", func() bool { return sc.count("POST /health") >= 3 })
	calls := sc.snapshot()
	pin := `PUT /metadata/annotation {"key":"pin","value":"` + srv.Pin() + `"}`
	if ready := slices.Index(calls, "POST /ready"); ready < 0 || !slices.Contains(calls[:ready], pin) {
		t.Errorf("calls %q: want the pin annotation before POST /ready", calls)
	}
	for _, want := range []string{`PUT /metadata/label {"key":"mode","value":"deathmatch"}`, `PUT /metadata/label {"key":"map","value":"arena"}`} {
		if !slices.Contains(calls, want) {
			t.Errorf("no %s in %q", want, calls)
		}
	}

	stall.Store(&release)
	// Let the ping that may be in flight land, then watch for more.
	eventually(t, "the game thread to be stuck", func() bool {
		n := srv.Stats().Ticks
		time.Sleep(100 * time.Millisecond)
		return srv.Stats().Ticks == n
	})
	time.Sleep(200 * time.Millisecond)
	stuck := sc.count("POST /health")
	time.Sleep(1500 * time.Millisecond) // 15 health intervals
	if n := sc.count("POST /health"); n != stuck {
		t.Errorf("%d health pings while the tick loop was stuck, want none", n-stuck)
	}
	stall.Store(nil)
	let()
	eventually(t, "pings to resume", func() bool { return sc.count("POST /health") > stuck })

	dialHost(t, srv, "alice") // a match needs a player to start
	eventually(t, "a match in progress", func() bool { return srv.Stats().MatchState == gamemsg.MatchInProgress })
	if _, err := srv.Exec("endmatch"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Shutdown at the end of the match", func() bool { return sc.count("POST /shutdown") == 1 })
}
