package main

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/internal/netrig"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoclient"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestRigMMOMigration is the migration goal's MMO scenario: a real
// `sparkhost run --module mmo` in the rig's server namespace, 64 players
// (the mmo client session, as the load test's) in 8 NATed client
// namespaces, each registered, logged in and walking in the world, and
// each making a request of the mmo every 400 ms (move, where, stop: reliable
// ordered requests, each answered once) while the test forces 100 NAT
// rebindings. Every request must be answered, no player may be
// disconnected, and each migration is measured against the session's round
// trip from the server's debug log.
//
//	go test -run TestRigMMOMigration -v ./cmd/sparkhost/
func TestRigMMOMigration(t *testing.T) {
	const namespaces, perNamespace = 8, 8
	rebinds, rig, bin, dir, conf := migrationScene(t, namespaces, 80)
	data := filepath.Join(dir, "server")
	if err := os.MkdirAll(filepath.Join(data, "modules", "mmo"), 0o700); err != nil {
		t.Fatal(err)
	}
	// Every player registers from the NAT's one address.
	if err := os.WriteFile(filepath.Join(data, "modules", "mmo", "config.toml"), []byte("max_registrations = 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := &lockedLines{}
	srv := rig.Server.Command(ctx, bin, "run", "--config", conf, "--internet", "--bind", rig.Server.Addr.String(),
		"--port", "27015", "--data-dir", data, "--module", "mmo")
	srv.Stdout, srv.Stderr = log, log
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	waitLines(t, log, "server identity pin: ", 1, 60*time.Second)
	waitLines(t, log, "sparkhost listening on", 1, 60*time.Second)
	pin := logAfter(log.String(), "server identity pin: ")
	addr := rig.Server.Addr.String() + ":27015"

	players := make([]*rigPlayer, namespaces*perNamespace)
	var wg sync.WaitGroup
	errs := make(chan error, len(players))
	for i := range players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := newRigPlayer(ctx, rig.Client(i%namespaces), addr, pin, i)
			if err != nil {
				errs <- err
				return
			}
			players[i] = p
		}()
		if i%8 == 7 {
			wg.Wait() // a few at a time: the 2-core machine hashes the passwords
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range players {
			p.c.Close()
		}
	})

	var answered, failed atomic.Int64
	stop := make(chan struct{})
	for _, p := range players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.play(ctx, stop, &answered, &failed)
		}()
	}
	for i := range rebinds {
		time.Sleep(250 * time.Millisecond)
		if err := rig.Rebind(i % namespaces); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	gone := 0
	for _, p := range players {
		select {
		case <-p.c.Done():
			gone++
		default:
		}
	}
	t.Logf("%d players: %d requests answered, %d failed, %d disconnected", len(players), answered.Load(), failed.Load(), gone)
	if failed.Load() != 0 || gone != 0 {
		t.Fatalf("%d requests failed, %d players disconnected", failed.Load(), gone)
	}
	moves, early := migrationLog(t, log.lines())
	logPathMetrics(t, rig)
	reportMoves(t, rebinds, len(players), moves, early)
}

// logAfter returns the rest of the first line of out that contains prefix.
func logAfter(out, prefix string) string {
	_, rest, _ := strings.Cut(out, prefix)
	v, _, _ := strings.Cut(rest, "\n")
	return strings.TrimSpace(v)
}

// rigPlayer is one mmo player over a socket in a client namespace.
type rigPlayer struct {
	c *netstack.Client
	s *mmoclient.Session
	i int
}

func newRigPlayer(ctx context.Context, ns *netrig.Client, addr, pin string, i int) (*rigPlayer, error) {
	conn, err := ns.ListenUDP(0)
	if err != nil {
		return nil, err
	}
	reg := gamemsg.NewRegistry()
	if err := mmoclient.RegisterTypes(reg); err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	server, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, err
	}
	c, _, err := client.Dial(dctx, netstack.ClientConfig{Server: server, Name: fmt.Sprintf("p%d", i), Pin: pin, Conn: conn, Registry: reg})
	if err != nil {
		return nil, fmt.Errorf("player %d: %w", i, err)
	}
	p := &rigPlayer{c: c, s: mmoclient.NewSession(c, func(string) {}), i: i}
	p.s.Iterations = 4096 // the server's minimum: 64 registrations on 2 cores
	go func() {
		for {
			m, err := c.Receive(context.Background())
			if err != nil {
				return
			}
			p.s.Handle(m)
		}
	}()
	acct, ch := fmt.Sprintf("rig%d", i), fmt.Sprintf("Rig%c%c", 'a'+i/26, 'a'+i%26)
	rctx, cancel2 := context.WithTimeout(ctx, 60*time.Second)
	defer cancel2()
	if _, err := p.s.Register(rctx, acct, "pw-"+acct); err != nil {
		return nil, fmt.Errorf("%s register: %w", acct, err)
	}
	if _, err := p.s.Login(rctx, acct, "pw-"+acct); err != nil {
		return nil, fmt.Errorf("%s login: %w", acct, err)
	}
	if err := p.s.Create(rctx, ch); err != nil {
		return nil, fmt.Errorf("%s create: %w", acct, err)
	}
	if _, err := p.s.Enter(rctx, ch); err != nil {
		return nil, fmt.Errorf("%s enter: %w", acct, err)
	}
	return p, nil
}

// play makes a request every 400 ms until stop: walk in a turning
// direction, ask where it is, stop; each must be answered.
func (p *rigPlayer) play(ctx context.Context, stop <-chan struct{}, answered, failed *atomic.Int64) {
	tick := time.NewTicker(400 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var err error
		switch n % 3 {
		case 0:
			a := float64(p.i+n) * 0.7
			err = p.s.Move(rctx, float32(math.Cos(a)), float32(math.Sin(a)))
		case 1:
			_, err = p.s.Where(rctx)
		default:
			err = p.s.Stop(rctx)
		}
		cancel()
		if err != nil {
			failed.Add(1)
		} else {
			answered.Add(1)
		}
	}
}
