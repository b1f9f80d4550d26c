package deathmatch_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/modules/deathmatch/netbot"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// BenchmarkRooms is the rooms load test of docs/performance.md: a server
// with a lobby (in this process, its stats read directly) running
// deathmatch rooms (one plugin subprocess for all of them) and tag rooms (a
// Lua state each), bots in a `sparkhost bots --rooms` subprocess.
//
//	memory: 100 empty tag rooms, then 100 empty deathmatch rooms, opened by
//	        one client that creates a room and leaves it (rooms stay open:
//	        the grace time is an hour); the server's live heap after a GC
//	        and the plugin's resident memory, before and after, per room;
//	load:   R rooms of 8 bots each (SPARK_BENCH_ROOMS, a list, default 100):
//	        once every bot is in and 3 s have passed, 10 s of the server's
//	        tick (the average over the window, the highest per-second
//	        peak) and tick rate.
//
//	go test -run XXX -bench Rooms -benchtime 1x -timeout 30m ./modules/deathmatch/
func BenchmarkRooms(b *testing.B) {
	counts := []int{100}
	if s := os.Getenv("SPARK_BENCH_ROOMS"); s != "" {
		counts = counts[:0]
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("SPARK_BENCH_ROOMS=%q: want a list of room counts", s)
			}
			counts = append(counts, n)
		}
	}
	b.Run("memory", benchRoomMemory)
	for _, n := range counts {
		b.Run(fmt.Sprintf("rooms=%d", n), func(b *testing.B) { benchRoomsLoad(b, n, 8) })
	}
}

func startRoomsServer(b *testing.B, clients int) *host.Server {
	return startServer(b, "", func(c *config.Config) {
		c.Modules.Load = nil
		c.Rooms.Enabled, c.Rooms.Modes = true, []string{"deathmatch", "../../scripts/tag.lua"}
		c.Rooms.Max, c.Rooms.MaxCapacity = 400, 64
		c.Rooms.EmptyGraceSeconds = 3600
		c.Rooms.CreatedPerClient = 1000 // one client opens the rooms of the memory figure
		c.Rooms.RequestsPerSecond, c.Rooms.RequestBurst = 1000, 1000
		c.Server.MaxClients = clients
		c.Match.ScoreLimit, c.Match.TimeLimitMinutes = 0, 0
		c.Match.WarmupSeconds = 0
		c.Match.MapRotation = []string{"arena"}
	})
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

var residentRE = regexp.MustCompile(`memory ([0-9.]+) MiB resident`)

// pluginResident is the deathmatch plugin's resident memory in MiB.
func pluginResident(b *testing.B, srv *host.Server) float64 {
	b.Helper()
	out, err := srv.Exec("module info deathmatch")
	m := residentRE.FindStringSubmatch(out)
	if err != nil || m == nil {
		b.Fatalf("module info deathmatch: %q %v", out, err)
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return f
}

// opener is a client that opens rooms and leaves them open.
type opener struct {
	b *testing.B
	c *netstack.Client
}

func (o *opener) request(t wire.MessageType, payload []byte) gamemsg.RoomResult {
	o.b.Helper()
	if err := o.c.Send(t, wire.ReliableOrdered, payload); err != nil {
		o.b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		m, err := o.c.Receive(ctx)
		if err != nil {
			o.b.Fatalf("waiting for the answer to %v: %v", t, err)
		}
		if m.Header.Type != gamemsg.TypeRoomResult {
			continue
		}
		if r, err := gamemsg.ParseRoomResult(m.Payload); err == nil && r.Request == t {
			if r.Code != gamemsg.RoomOK {
				o.b.Fatalf("%v: %v %s", t, r.Code, r.Detail)
			}
			return r
		}
	}
}

// open opens n rooms of mode.
func (o *opener) open(mode string, n int) {
	for i := range n {
		o.request(gamemsg.TypeRoomCreate, gamemsg.AppendRoomCreate(nil, &gamemsg.RoomCreate{Name: fmt.Sprintf("r%d", i), Mode: mode}))
		o.request(gamemsg.TypeRoomLeave, nil)
	}
}

func benchRoomMemory(b *testing.B) {
	const n = 100
	srv := startRoomsServer(b, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg, err := netbot.Registry()
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []wire.Schema{ // tag's, which it sends reliably
		{ID: 1401, Name: "tag_state", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 9, MaxLen: 9, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		{ID: 1402, Name: "tag_announce", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 2, MaxLen: 202, StringFieldOffset: 0, RequiresAdmitted: true},
	} {
		if err := reg.Register("tag", s); err != nil {
			b.Fatal(err)
		}
	}
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "opener", Pin: srv.Pin(), Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	o := &opener{b: b, c: c}
	time.Sleep(time.Second)
	h0 := liveHeap()
	o.open("tag", n)
	time.Sleep(time.Second)
	h1 := liveHeap()
	o.open("deathmatch", 1)
	time.Sleep(time.Second)
	h2, p1 := liveHeap(), pluginResident(b, srv)
	o.open("deathmatch", n-1)
	time.Sleep(2 * time.Second)
	h3, p2 := liveHeap(), pluginResident(b, srv)
	lua := float64(h1-h0) / n / 1024
	dm := float64(h3-h1) / n / 1024
	plugin := (p2 - p1) * 1024 / (n - 1)
	b.ReportMetric(lua, "KiB-server/lua-room")
	b.ReportMetric(dm, "KiB-server/dm-room")
	b.ReportMetric(plugin, "KiB-plugin/dm-room")
	b.Logf("server heap %.1f → %.1f (100 tag rooms) → %.1f (1 deathmatch room) → %.1f MiB (100); plugin resident %.1f → %.1f MiB",
		float64(h0)/(1<<20), float64(h1)/(1<<20), float64(h2)/(1<<20), float64(h3)/(1<<20), p1, p2)
	if out, _ := srv.Exec("rooms"); strings.Count(out, "\n") != 2*n {
		b.Errorf("rooms: want %d\n%s", 2*n, out)
	}
}

func benchRoomsLoad(b *testing.B, rooms, per int) {
	const settle, steady = 3 * time.Second, 10 * time.Second
	n := rooms * per
	srv := startRoomsServer(b, n)
	bin := testplugin.Build(b, "./cmd/sparkhost")
	var out strings.Builder
	bots := exec.Command(bin, "bots", "--count", strconv.Itoa(n), "--rooms", strconv.Itoa(rooms), "--server", srv.Addr().String(),
		"--pin", srv.Pin(), "--duration", "10m", "--seed", "1")
	bots.Stdout, bots.Stderr = &out, &out
	if err := bots.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- bots.Wait() }()
	defer func() {
		_ = bots.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = bots.Process.Kill()
			<-exited
		}
	}()
	began := time.Now()
	for deadline := time.Now().Add(10 * time.Minute); srv.Stats().Players < n; time.Sleep(250 * time.Millisecond) {
		select {
		case err := <-exited:
			exited <- err // for the deferred stop
			b.Fatalf("the bots ended before all were in (%v)\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d bots in after 10 min\n%s", srv.Stats().Players, n, out.String())
		}
	}
	connected := time.Since(began)
	time.Sleep(settle)
	before, t0 := srv.Stats(), time.Now()
	b.ResetTimer()
	var peak float64
	minRate := before.CurrentTickRate
	for end := t0.Add(steady); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		st := srv.Stats()
		peak = max(peak, st.RecentPeakTickMS)
		minRate = min(minRate, st.CurrentTickRate)
	}
	after, elapsed := srv.Stats(), time.Since(t0).Seconds()
	b.StopTimer()
	ticks := after.Ticks - before.Ticks
	avg := (after.AvgTickMS*float64(after.Ticks) - before.AvgTickMS*float64(before.Ticks)) / float64(ticks)
	b.ReportMetric(avg, "tick-avg-ms")
	b.ReportMetric(peak, "tick-peak-ms")
	b.ReportMetric(float64(ticks)/elapsed, "ticks/s")
	b.ReportMetric(minRate, "min-tick-rate")
	b.ReportMetric(float64(after.BytesOut-before.BytesOut)/float64(n)/elapsed, "out-B/client/s")
	info, _ := srv.Exec("module info deathmatch")
	b.Logf("%d bots in %d rooms connected in %v; %d players at the end; rooms %d; plugin: %s", n, rooms, connected.Round(time.Second),
		after.Players, after.Rooms, firstLine(residentRE.FindString(info)))
	if after.Players != n {
		b.Errorf("%d players at the end of the window, want %d", after.Players, n)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
