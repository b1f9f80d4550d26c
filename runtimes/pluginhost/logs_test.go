package pluginhost_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/runtimes/pluginhost"
)

// recordHandler keeps every record with its attributes flattened.
type recordHandler struct {
	mu    *sync.Mutex
	recs  *[]string
	attrs []slog.Attr
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range h.attrs {
		b.WriteString(" " + a.String())
	}
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	h.mu.Lock()
	*h.recs = append(*h.recs, b.String())
	h.mu.Unlock()
	return nil
}
func (h recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return h
}
func (h recordHandler) WithGroup(string) slog.Handler { return h }

// TestPluginLogsReachTheServerLog: records the plugin writes with its
// Host.Log() arrive in the server's log with the module's name and their
// level; a panic's message arrives at Error.
func TestPluginLogsReachTheServerLog(t *testing.T) {
	var mu sync.Mutex
	var recs []string
	log := slog.New(recordHandler{mu: &mu, recs: &recs})
	find := func(parts ...string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range recs {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(r, p)
			}
			if ok {
				return true
			}
		}
		return false
	}
	waitFor := func(parts ...string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if find(parts...) {
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no record with %q in:\n%s", parts, strings.Join(recs, "\n"))
	}

	m, err := pluginhost.New(pluginhost.Config{Path: testplugin.Build(t, "./examples/greeter"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Load(newStubHost()); err != nil {
		t.Fatal(err)
	}
	waitFor("INFO greeter loaded", "module=greeter", "server=stub")
	m.Unload()

	f, _ := pluginhost.New(pluginhost.Config{Path: testplugin.Build(t, "./host/testdata/plugins/faulty"), Log: log})
	h := newStubHost()
	if _, err := f.Load(h); err != nil {
		t.Fatal(err)
	}
	defer f.Unload()
	f.Step(tick(1), []module.Event{h.admit(1, "alice"), {Kind: module.EventMessage, Client: 1, Type: 1100, Payload: str("panic")}})
	// A time.Duration reads as one (not lease=1e+10), a large count as an
	// integer (not 1.2345678e+07).
	waitFor("INFO faulty loaded", "lease=10s", "budget=1.5s", "rows=12345678")
	waitFor("ERROR panic: boom on request from alice", "module=faulty")
	if find("ERROR goroutine ") {
		t.Error("the panic's stack trace was logged at Error; it belongs at Debug")
	}
}
