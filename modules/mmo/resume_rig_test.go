package mmo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/hosttest"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/internal/netrig"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoclient"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Resumption on the real-network rig (docs/netrig.md): an MMO character
// logged in and walking, behind the router's NAT on a `home` link; the
// player's path goes dark for 20 s — twice the default client_timeout, so
// both ends time out — and the client comes back by itself to the same
// seat: same character, same place, and no second login (the test never
// logs in again; Where and Move answer as for a player in the world).
// Defaults otherwise (client_timeout 10 s, resume_seconds 30). Bounded:
// about 40 s.
//
//	go test -run TestRigMMOResumeAfter20sOutage -v ./modules/mmo/
//
// The subtest resume_seconds=0 is the behaviour before resumption, for
// comparison: a new connection finds itself logged out.
func TestRigMMOResumeAfter20sOutage(t *testing.T) {
	t.Run("resume_seconds=30", func(t *testing.T) { rigMMOOutage(t, 30) })
	t.Run("resume_seconds=0", func(t *testing.T) { rigMMOOutage(t, 0) })
}

func rigMMOOutage(t *testing.T, resumeSeconds int) {
	const outage = 20 * time.Second
	rig := netrig.New(t, netrig.Config{Clients: 1, Profile: netrig.Home, NAT: true, Lifetime: 3 * time.Minute})
	srv := startRigMMO(t, rig, resumeSeconds)
	node := rig.Client(0)

	reg := gamemsg.NewRegistry()
	must(t, mmoclient.RegisterTypes(reg))
	cfg := netstack.ClientConfig{Server: srv.Addr(), Name: "walker", Pin: srv.Pin(), Registry: reg, Resumable: true}
	var c *netstack.Client
	must(t, node.Do(func() (err error) {
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		c, _, err = client.Dial(ctx, cfg)
		return err
	}))
	p := &player{c: c, got: map[wire.MessageType]int{}}
	p.s = mmoclient.NewSession(c, p.event)
	p.s.Iterations = testIterations
	go p.receive(c)
	t.Cleanup(func() { p.c.Close() })

	_, err := p.s.Register(bg, "walker", "pw-walker")
	must(t, err)
	_, err = p.s.Login(bg, "walker", "pw-walker")
	must(t, err)
	must(t, p.s.Create(bg, "Walker"))
	_, err = p.s.Enter(bg, "Walker")
	must(t, err)
	must(t, p.s.Move(bg, 0.6, 0.8))
	time.Sleep(time.Second) // it walks
	must(t, p.s.Move(bg, 0, 0))
	before, err := p.s.Where(bg)
	must(t, err)

	until := rig.Outage(0, outage)
	select {
	case <-c.Done():
	case <-time.After(outage + 5*time.Second):
		t.Fatal("the client did not time out")
	}
	reason, _ := c.CloseReason()
	left, ok := c.Resumable()
	if resumeSeconds == 0 {
		rigMMOAfresh(t, rig, cfg, until, before)
		return
	}
	if !ok {
		t.Fatalf("not resumable after %v (closed %v)", time.Since(until.Add(-outage)), reason)
	}
	var nc *netstack.Client
	must(t, node.Do(func() (err error) {
		ctx, cancel := context.WithDeadline(bg, left)
		defer cancel()
		nc, err = c.Resume(ctx)
		return err
	}))
	back := time.Since(until)
	p.s.Adopt(nc)
	p.c = nc
	go p.receive(nc)
	if nc.ID() != c.ID() {
		t.Fatalf("resumed as client %d, want %d", nc.ID(), c.ID())
	}
	after, err := p.s.Where(bg)
	if err != nil {
		t.Fatalf("Where after the resumption (no second login): %v; events %q", err, p.lines())
	}
	must(t, p.s.Move(bg, 1, 0))
	t.Logf("outage %v (client_timeout 10 s, resume_seconds 30): %v timed out; resumed %v after the path came back; where before %+v, after %+v",
		outage, reason, back.Round(time.Millisecond), before, after)
	if after.ID != before.ID || after.X != before.X || after.Y != before.Y {
		t.Fatalf("a different place: before %+v, after %+v", before, after)
	}
	for _, l := range p.lines() {
		if strings.Contains(l, "logged out") || strings.Contains(l, "logged in") && !strings.Contains(l, "walker") {
			t.Fatalf("unexpected session line %q", l)
		}
	}
	ctr := srv.Net().Counters()
	if ctr.Resumed.Load() != 1 || ctr.SeatsExpired.Load() != 0 {
		t.Fatalf("resumed %d, holds expired %d", ctr.Resumed.Load(), ctr.SeatsExpired.Load())
	}
}

// startRigMMO runs a server with the mmo plugin in the rig's server
// namespace, exposed as on the internet, the admission caps off.
func startRigMMO(t *testing.T, rig *netrig.Rig, resumeSeconds int) *host.Server {
	t.Helper()
	bin := testplugin.Build(t, "./modules/mmo/cmd/mmo")
	dataDir := t.TempDir()
	testModuleConfig(t, dataDir)
	cfg := config.Default()
	port := 27015
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir, Modules: []string{"mmo"}}, func(string) string { return "" })
	cfg.Network.Exposure, cfg.Network.BindAddress = config.ExposureInternet, rig.Server.Addr.String()
	cfg.Network.AdmittedPerAddress, cfg.Network.AdmittedPerPrefix = 0, 0
	cfg.Match.WarmupSeconds, cfg.Match.IntermissionSeconds = 0, 0
	cfg.Network.ResumeSeconds = resumeSeconds
	var srv *host.Server
	must(t, rig.Server.Do(func() (err error) {
		srv, err = host.New(host.Options{Config: cfg, Logger: testLogger(),
			Builtin: func(name string) (string, []string, bool) { return bin, nil, name == "mmo" }})
		return err
	}))
	hosttest.Run(t, srv)
	return srv
}

// event records an unsolicited session line.
func (p *player) event(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, line)
	p.times = append(p.times, time.Now())
}

// lines returns the session lines so far.
func (p *player) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.events...)
}

// rigMMOAfresh is the path without resumption: once the path is back, a new
// connection is a new client, not logged in: Where is refused until it
// logs in and enters again.
func rigMMOAfresh(t *testing.T, rig *netrig.Rig, cfg netstack.ClientConfig, until time.Time, before mmoproto.WhereResult) {
	time.Sleep(time.Until(until))
	var c *netstack.Client
	must(t, rig.Client(0).Do(func() (err error) {
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		c, _, err = client.Dial(ctx, cfg)
		return err
	}))
	t.Cleanup(func() { c.Close() })
	p := &player{c: c, got: map[wire.MessageType]int{}}
	p.s = mmoclient.NewSession(c, p.event)
	go p.receive(c)
	_, err := p.s.Where(bg)
	t.Logf("without resumption: a new connection (client %d) asks Where: %v (before the outage: %+v)", c.ID(), err, before)
	if err == nil {
		t.Fatal("a new connection was in the world without logging in")
	}
}
