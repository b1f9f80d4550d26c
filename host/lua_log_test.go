package host_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
)

// moduleTags records, for every log line, the module attribute it carries
// (from the record or from the logger's With).
type moduleTags struct {
	mu    *sync.Mutex
	lines map[string]string // message -> module attribute
	with  string
}

func (h moduleTags) Enabled(context.Context, slog.Level) bool { return true }
func (h moduleTags) Handle(_ context.Context, r slog.Record) error {
	mod := h.with
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "module" {
			mod = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.lines[r.Message] = mod
	h.mu.Unlock()
	return nil
}
func (h moduleTags) WithAttrs(as []slog.Attr) slog.Handler {
	for _, a := range as {
		if a.Key == "module" {
			h.with = a.Value.String()
		}
	}
	return h
}
func (h moduleTags) WithGroup(string) slog.Handler { return h }

// TestLuaLogLinesCarryTheModuleName: a spark.log line in a tick is filed
// under the module's name, as its faults are, not under its path.
func TestLuaLogLinesCarryTheModuleName(t *testing.T) {
	var mu sync.Mutex
	tags := moduleTags{mu: &mu, lines: make(map[string]string)}
	cfg := config.Default()
	port, dataDir := 0, shortDataDir(t)
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir, Modules: []string{"testdata/logger.lua"}}, func(string) string { return "" })
	srv, err := host.New(host.Options{Config: cfg, Logger: slog.New(tags)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, "the tick's log line", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := tags.lines["first tick of the logger"]
		return ok
	})
	mu.Lock()
	defer mu.Unlock()
	if got := tags.lines["first tick of the logger"]; got != "logger" {
		t.Errorf("the tick's spark.log line is tagged module=%q, want the module's name", got)
	}
	// Before its manifest is known, a module's lines name where it came from.
	if got := tags.lines["loading the logger"]; got != "testdata/logger.lua" {
		t.Errorf("the load-time line is tagged module=%q, want its path", got)
	}
}
