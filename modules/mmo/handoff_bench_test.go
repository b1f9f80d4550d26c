package mmo_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/config"
)

// BenchmarkHandoffs: clients walk back and forth across the border of a
// world of two areas (two servers with their plugin subprocesses, one
// PostgreSQL database, UDP on 127.0.0.1), each step across handed over and
// followed by the client. One handoff's latency runs from the answer to
// the MoveIntent that crosses (the crossing happens in that very tick,
// right after the request is handled) to the admitted client's Entered on
// the neighbour: commit on the source, Handoff to the client, a new
// handshake with the neighbour, the ticket checked there and admitted in
// the database. Reported: handoffs a second over all clients, p50 and p99.
//
//	go test ./modules/mmo -run '^$' -bench BenchmarkHandoffs -benchtime 400x
//
// Needs PostgreSQL (skips without it). No timing is asserted.
func BenchmarkHandoffs(b *testing.B) {
	const clients = 8
	w := newAreaWorld(b, "speed = 600\nmax_registrations = 0", // 10 units a tick at 60 Hz: one MoveIntent crosses; 8 registrations from 127.0.0.1
		testArea{name: "west", bounds: [4]float64{0, 0, 500, 1000}},
		testArea{name: "east", bounds: [4]float64{500, 0, 1000, 1000}})
	w.mod = func(c *config.Config) {
		// Every client is on 127.0.0.1 and makes a handshake per handoff.
		c.Network.ConnectBurst, c.Network.ConnectRefillPerSecond = 10000, 10000
		c.Network.PrefixBurst, c.Network.PrefixRefillPerSecond = 10000, 10000
	}
	west := w.start(b, 0)
	w.start(b, 1)
	players := make([]*player, clients)
	for i := range players {
		name := fmt.Sprintf("Bench%c", 'a'+i)
		p := newPlayer(b, west, fmt.Sprintf("bench%d", i), name)
		p.follow(b)
		e, err := p.s.Enter(bg, name)
		must(b, err)
		must(b, p.s.Move(bg, 1, 0)) // to the border: the first handoff, not measured
		select {
		case <-p.handed:
		case <-time.After(20 * time.Second):
			b.Fatalf("%s (at %v) was not handed over within 20 s", name, e.X)
		}
		players[i] = p
	}
	per := max(1, b.N/clients)
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	b.ResetTimer()
	began := time.Now()
	for _, p := range players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dx := float32(-1) // every client is on east after its first handoff
			for range per {
				if err := p.s.Move(bg, dx, 0); err != nil {
					b.Errorf("move: %v", err)
					return
				}
				crossed := time.Now()
				select {
				case at := <-p.handed:
					mu.Lock()
					lat = append(lat, at.Sub(crossed))
					mu.Unlock()
					dx = -dx
				case <-time.After(20 * time.Second):
					b.Errorf("no handoff within 20 s")
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(len(lat))/took.Seconds(), "handoffs/s")
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
