package deathmatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/hosttest"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/internal/netrig"
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/modules/deathmatch/netbot"
	"github.com/sparkhost/sparkhost/netstack"
)

// Resumption on the real-network rig (docs/netrig.md): a deathmatch on a
// `home` link behind the router's NAT; one player's path goes completely
// dark for 10 s — longer than the timeout (5 s here at both ends, so the
// drop is certain: with the default 10 s a 10 s outage races the timeout,
// and a path back before the client's own timeout just wakes the seat) —
// and it comes back by itself to the same seat: the same client id, team
// and score, the module never told it left. Bounded: about 45 s.
//
//	go test -run TestRigDeathmatchResumeAfter10sOutage -v ./modules/deathmatch/
//
// The subtest resume_seconds=0 is the behaviour before resumption, for
// comparison: the player is dropped, its seat and score gone.
func TestRigDeathmatchResumeAfter10sOutage(t *testing.T) {
	t.Run("resume_seconds=30", func(t *testing.T) { rigDeathmatchOutage(t, 30) })
	t.Run("resume_seconds=0", func(t *testing.T) { rigDeathmatchOutage(t, 0) })
}

func rigDeathmatchOutage(t *testing.T, resumeSeconds int) {
	const outage = 10 * time.Second
	rig := netrig.New(t, netrig.Config{Clients: 2, Profile: netrig.Home, NAT: true, Lifetime: 3 * time.Minute})
	srv := startRigServer(t, rig, func(c *config.Config) {
		c.Server.ClientTimeout, c.Server.HeartbeatInterval = 5, 1
		c.Network.ResumeSeconds = resumeSeconds
	})
	addr := srv.Addr() // the rig's server address, on the namespace's socket

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	dial := func(node *netrig.Client, name string, seed uint64) *netbot.Bot {
		cfg := netbot.Config{Name: name, Seed: seed,
			Client: netstack.ClientConfig{Server: addr, Pin: srv.Pin(), Resumable: true, Timeout: 5 * time.Second},
			Resume: func(ctx context.Context, c *netstack.Client) (nc *netstack.Client, err error) {
				// The new socket opens in the client's namespace.
				derr := node.Do(func() error { nc, err = c.Resume(ctx); return nil })
				if derr != nil {
					return nil, derr
				}
				return nc, err
			}}
		var b *netbot.Bot
		if err := node.Do(func() (err error) { b, err = netbot.Dial(ctx, cfg); return err }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wg.Go(func() {
			if err := b.Run(ctx); err != nil && !(resumeSeconds == 0 && name == "ann" && errors.Is(err, netbot.ErrDropped)) {
				t.Errorf("%s: %v", name, err)
			}
		})
		return b
	}
	ann := dial(rig.Client(0), "ann", 1)
	for i := range 3 {
		dial(rig.Client(1), fmt.Sprintf("bot%d", i+1), uint64(10+i))
	}
	time.Sleep(8 * time.Second) // a few fights

	until := rig.Outage(0, outage)
	time.Sleep(300 * time.Millisecond) // inputs already on their way have landed
	before, ok := playerLine(srv, ann.ID())
	if !ok {
		t.Fatalf("ann (%d) not in dm_status:\n%s", ann.ID(), status(srv))
	}
	time.Sleep(time.Until(until) - 500*time.Millisecond)
	during, _ := playerLine(srv, ann.ID())
	held := srv.Net().HeldSeats()
	if resumeSeconds == 0 {
		time.Sleep(time.Until(until) + 2*time.Second)
		_, stays := playerLine(srv, ann.ID())
		t.Logf("without resumption: outage %v; ann before %q; ann's seat kept: %v; held seats %d; resumed %d",
			outage, before, stays, held, ann.Stats().Resumed)
		if stays || held != 0 || ann.Stats().Resumed != 0 {
			t.Fatalf("resume_seconds = 0 kept a seat")
		}
		return
	}

	for deadline := until.Add(20 * time.Second); ann.Stats().Resumed == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			ctr := srv.Net().Counters()
			t.Fatalf("ann did not resume within 20 s of the path's return (held %d, expired %d, resumed %d, refused %d/%d)\n%s",
				ctr.SeatsHeld.Load(), ctr.SeatsExpired.Load(), ctr.Resumed.Load(), ctr.ResumeRefusedExpired.Load(), ctr.ResumeRefusedInvalid.Load(), status(srv))
		}
	}
	back := time.Since(until)
	after, ok := playerLine(srv, ann.ID())
	ctr := srv.Net().Counters()
	t.Logf("outage %v (client_timeout 5 s); held seats at its end %d; resumed %v after the path came back", outage, held, back.Round(time.Millisecond))
	t.Logf("ann before: %s\nann during: %s\nann after:  %s", before, during, after)
	switch {
	case held != 1:
		t.Errorf("seats held at the outage's end: %d, want 1 (the drop was not a timeout?)", held)
	case !ok:
		t.Errorf("ann (%d) gone after the resumption:\n%s", ann.ID(), status(srv))
	case ctr.Resumed.Load() != 1 || ctr.SeatsExpired.Load() != 0:
		t.Errorf("resumed %d, holds expired %d", ctr.Resumed.Load(), ctr.SeatsExpired.Load())
	}
	// id, name, team, kills and score as when the path went dark: the
	// line's fields but health and deaths (a body left standing can be
	// shot).
	if kept(before) != kept(during) || kept(before) != kept(after) {
		t.Errorf("ann's seat changed: before %q, during %q, after %q", before, during, after)
	}
}

// kept is a dm_status player line without health and deaths.
func kept(line string) string {
	f := strings.Fields(line)
	if len(f) < 7 {
		return line
	}
	return strings.Join([]string{f[0], f[1], f[2], f[4], f[6]}, " ")
}

func status(srv *host.Server) string {
	out, _ := srv.Exec("dm_status")
	return out
}

// playerLine is the dm_status line of client id.
func playerLine(srv *host.Server, id uint32) (string, bool) {
	for _, l := range strings.Split(status(srv), "\n") {
		if f := strings.Fields(l); len(f) >= 7 && f[0] == fmt.Sprint(id) {
			return strings.TrimSpace(l), true
		}
	}
	return "", false
}

// startRigServer runs a server with the deathmatch plugin in the rig's
// server namespace (its socket opened there), exposed as on the internet,
// the admission caps off: every client comes through the one NAT address.
func startRigServer(t *testing.T, rig *netrig.Rig, mod func(*config.Config)) *host.Server {
	t.Helper()
	bin := testplugin.Build(t, "./modules/deathmatch/cmd/deathmatch")
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "modules", deathmatch.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, deathmatch.ConfigFile), []byte("respawn_seconds = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	port := 27015
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir, Modules: []string{deathmatch.Name}}, func(string) string { return "" })
	cfg.Network.Exposure, cfg.Network.BindAddress = config.ExposureInternet, rig.Server.Addr.String()
	cfg.Network.AdmittedPerAddress, cfg.Network.AdmittedPerPrefix = 0, 0
	cfg.Match.WarmupSeconds, cfg.Match.IntermissionSeconds, cfg.Match.TimeLimitMinutes = 0, 0, 10
	if mod != nil {
		mod(&cfg)
	}
	var srv *host.Server
	err := rig.Server.Do(func() (err error) {
		log := slog.New(slog.DiscardHandler)
		if os.Getenv("SPARK_TEST_LOG") != "" {
			log = slog.New(slog.NewTextHandler(os.Stderr, nil))
		}
		srv, err = host.New(host.Options{Config: cfg, Logger: log,
			Builtin: func(name string) (string, []string, bool) { return bin, nil, name == deathmatch.Name }})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	hosttest.Run(t, srv)
	return srv
}
