package host_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/hosttest"
	"github.com/sparkhost/sparkhost/internal/syncbuf"
)

// TestFirstMapIsNotAChange: a server's log says "map changed" when the map
// changes (nextmap), not when the room starts on its first map — an mmo
// server's log used to open with "map changed map=arena" for a world that
// has no maps.
func TestFirstMapIsNotAChange(t *testing.T) {
	cfg := config.Default()
	port, dataDir := 0, shortDataDir(t)
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir}, func(string) string { return "" })
	logs := &syncbuf.Buffer{}
	srv, err := host.New(host.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hosttest.Run(t, srv)
	eventually(t, "server started", func() bool { return strings.Contains(logs.String(), "server started") })
	if n := strings.Count(logs.String(), `msg="map changed"`); n != 0 {
		t.Fatalf("the first map is logged as a change (%d lines):\n%s", n, logs.String())
	}
	if _, err := srv.Exec("nextmap"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "map changed", func() bool { return strings.Count(logs.String(), `msg="map changed"`) == 1 })
}
