package host_test

import (
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/discovery"
	"github.com/sparkhost/sparkhost/internal/syncbuf"
)

// freeUDPPort asks the kernel for a free loopback port (for settings that do
// not accept 0).
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

func TestLANDiscoveryAnswersWithServerInfo(t *testing.T) {
	lanPort := freeUDPPort(t)
	srv, _ := startHost(t, func(c *config.Config) {
		c.Server.Name = "Zulu Base"
		c.LAN.Enabled = true
		c.LAN.Port = lanPort
	})
	dialHost(t, srv, "alice")
	eventually(t, "player admitted", func() bool { return srv.Stats().Players == 1 })
	var res []discovery.Result
	eventually(t, "discovery answer with one player", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		res, err = discovery.Query(ctx, []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(lanPort))}, 300*time.Millisecond)
		return err == nil && len(res) == 1 && res[0].Info.Players == 1
	})
	info := res[0].Info
	if info.Name != "Zulu Base" || info.GamePort != srv.Addr().Port() || info.MaxPlayers != 32 || info.Map == "" {
		t.Errorf("discovery info %+v", info)
	}
}

// TestStdinConsoleAndLogFile: commands piped into the server's stdin are
// answered, and the log file records connects and disconnects with reasons.
func TestStdinConsoleAndLogFile(t *testing.T) {
	cfg := config.Default()
	port, dataDir := 0, shortDataDir(t)
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir}, func(string) string { return "" })
	logFile := filepath.Join(filepath.Dir(dataDir), "server.log")
	log, closeLog, err := host.NewLogger("info", logFile, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	out := &syncbuf.Buffer{}
	srv, err := host.New(host.Options{Config: cfg, Logger: log, Console: pr, ConsoleOut: out})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()

	c := dialHost(t, srv, "alice")
	eventually(t, "player admitted", func() bool { return srv.Stats().Players == 1 })
	io.WriteString(pw, "players\nstatus\n")
	eventually(t, "console answers", func() bool {
		s := out.String()
		return strings.Contains(s, "alice") && strings.Contains(s, "players 1/32")
	})
	c.Close()
	eventually(t, "player gone", func() bool { return srv.Stats().Players == 0 })
	cancel()
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	closeLog()
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"msg":"client connected"`, `"msg":"client disconnected"`, `"reason":"ClientQuit"`, `"name":"alice"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("log file lacks %s:\n%s", want, data)
		}
	}
}
