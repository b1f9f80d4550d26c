package mmo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/config"
)

// BenchmarkLoad200 is the load test of docs/performance.md: 200 headless
// sessions on loopback register, log in, create and enter a character, then
// all move at once (each in its own direction, turning every 2 s) for 10 s,
// while the server ticks at 60 Hz with the mmo plugin replicating positions
// at 10 Hz. It reports the server's tick time (average over the moving
// phase, and the peak since start) and the position entries delivered.
//
//	go test -run XXX -bench Load200 -benchtime 1x ./modules/mmo/
func BenchmarkLoad200(b *testing.B) {
	const n = 200
	const moving = 10 * time.Second
	srv := startServer(b, b.TempDir(), func(c *config.Config) {
		c.Server.MaxClients = 256
		// Every session comes from 127.0.0.1: lift the per-source connect budget.
		c.Network.ConnectBurst, c.Network.ConnectRefillPerSecond = 1000, 1000
		c.Network.PrefixBurst, c.Network.PrefixRefillPerSecond = 1000, 1000
	})
	players := make([]*player, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range players {
		players[i] = dial(b, srv, fmt.Sprintf("p%d", i))
	}
	for i, p := range players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acct, ch := fmt.Sprintf("load%d", i), fmt.Sprintf("Char%c%c", 'a'+i/26, 'a'+i%26)
			if _, err := p.s.Register(bg, acct, "pw-"+acct); err != nil {
				errs <- fmt.Errorf("%s register: %w", acct, err)
				return
			}
			if _, err := p.s.Login(bg, acct, "pw-"+acct); err != nil {
				errs <- fmt.Errorf("%s login: %w", acct, err)
				return
			}
			if err := p.s.Create(bg, ch); err != nil {
				errs <- fmt.Errorf("%s create: %w", acct, err)
				return
			}
			if _, err := p.s.Enter(bg, ch); err != nil {
				errs <- fmt.Errorf("%s enter: %w", acct, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	before := srv.Stats()
	b.ResetTimer()
	stop := time.Now().Add(moving)
	for i, p := range players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 7))
			for time.Now().Before(stop) {
				a := r.Float64() * 2 * math.Pi
				if err := p.s.Move(bg, float32(math.Cos(a)), float32(math.Sin(a))); err != nil {
					b.Error(err)
					return
				}
				time.Sleep(2 * time.Second)
			}
		}()
	}
	var peak float64
	time.Sleep(1500 * time.Millisecond) // the first full second of moving
	for time.Now().Before(stop.Add(-time.Second)) {
		time.Sleep(500 * time.Millisecond)
		peak = max(peak, srv.Stats().RecentPeakTickMS)
	}
	wg.Wait()
	b.StopTimer()
	after := srv.Stats()
	ticks := after.Ticks - before.Ticks
	avg := (after.AvgTickMS*float64(after.Ticks) - before.AvgTickMS*float64(before.Ticks)) / float64(ticks)
	in, _ := srv.Exec("mmo_online")
	b.ReportMetric(avg, "tick-avg-ms")
	b.ReportMetric(peak, "tick-peak-ms")
	b.ReportMetric(after.PeakTickMS, "setup-peak-ms")
	b.ReportMetric(float64(ticks)/moving.Seconds(), "ticks/s")
	b.Logf("%s; %d ticks in %v", firstLine(in), ticks, moving)
}

func firstLine(s string) string {
	for i := range s {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
