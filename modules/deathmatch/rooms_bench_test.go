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
	"github.com/sparkhost/sparkhost/internal/cpupin"
	"github.com/sparkhost/sparkhost/internal/syncbuf"
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
	split := runtime.NumCPU() >= 2 && os.Getenv("SPARK_BENCH_ROOMS_SAME_CORES") == ""
	bin := testplugin.Build(b, "./cmd/sparkhost") // built before the pin, on both cores
	testplugin.Build(b, "./modules/deathmatch/cmd/deathmatch")
	if split {
		// The server (and its plugin, started after this) on CPU 0 with
		// one P, the bots on the last CPU: the figure is one core's, not
		// that of 1,600 bots fighting the server for both cores.
		cpupin.ProcessOrLog(b, 0)
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	}
	srv := startRoomsServer(b, n)
	// The plugin starts with the first room: its resident memory at the
	// end, all over the rooms, is an upper bound per room.
	h0, rss0 := liveHeap(), residentKiB()
	var out syncbuf.Buffer
	args := []string{"bots", "--count", strconv.Itoa(n), "--rooms", strconv.Itoa(rooms), "--server", srv.Addr().String(),
		"--pin", srv.Pin(), "--duration", "15m", "--seed", "1", "--service", "100ms"}
	bots := exec.Command(bin, args...)
	if _, err := exec.LookPath("taskset"); split && err == nil {
		bots = exec.Command("taskset", append([]string{"-c", strconv.Itoa(runtime.NumCPU() - 1), bin}, args...)...)
		bots.Env = append(os.Environ(), "GOMAXPROCS=1")
	}
	if path := os.Getenv("SPARK_BENCH_ROOMS_BOTS_CPUPROFILE"); path != "" { // the bots' process, from all connected to the end
		if bots.Env == nil {
			bots.Env = os.Environ()
		}
		bots.Env = append(bots.Env, "SPARKHOST_BOTS_CPUPROFILE="+path)
	}
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
	connected, progress := waitAllInRooms(b, srv, n, rooms, exited, &out)
	time.Sleep(settle)
	stopProfile := profileServer(b)
	profilePlugin(syscall.SIGUSR1)
	before, t0, cpu0 := srv.Stats(), time.Now(), processCPU()
	plugin0, bots0, waited0 := childCPU("deathmatch-"), childCPU("sparkhost-"), childWaited("sparkhost-")
	coreWaited0 := waited(os.Getpid()) + childWaited("deathmatch-")
	b.ResetTimer()
	var peak float64
	minRate := before.CurrentTickRate
	for end := t0.Add(steady); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		st := srv.Stats()
		peak = max(peak, st.RecentPeakTickMS)
		minRate = min(minRate, st.CurrentTickRate)
	}
	after, elapsed, cpu := srv.Stats(), time.Since(t0).Seconds(), processCPU()-cpu0
	pluginCPU, botsCPU := childCPU("deathmatch-")-plugin0, childCPU("sparkhost-")-bots0
	botsWaited := childWaited("sparkhost-") - waited0
	coreWaited := waited(os.Getpid()) + childWaited("deathmatch-") - coreWaited0
	b.StopTimer()
	stopProfile()
	profilePlugin(syscall.SIGUSR2)
	ticks := after.Ticks - before.Ticks
	avg := (after.AvgTickMS*float64(after.Ticks) - before.AvgTickMS*float64(before.Ticks)) / float64(ticks)
	b.ReportMetric(avg, "tick-avg-ms")
	b.ReportMetric(peak, "tick-peak-ms")
	b.ReportMetric(float64(ticks)/elapsed, "ticks/s")
	b.ReportMetric(minRate, "min-tick-rate")
	b.ReportMetric(float64(after.BytesOut-before.BytesOut)/float64(n)/elapsed, "out-B/client/s")
	// What the bots kept up: a bot that does sends a datagram each tick
	// (its input, with its acks) and little else.
	b.ReportMetric(float64(after.Net.PacketsReceived-before.Net.PacketsReceived)/float64(n)/elapsed, "in-datagrams/client/s")
	b.ReportMetric(100*cpu.Seconds()/elapsed, "server-cpu-%")
	// The plugin shares the server's core; the bots have the other.
	b.ReportMetric(100*pluginCPU.Seconds()/elapsed, "plugin-cpu-%")
	b.ReportMetric(100*(cpu+pluginCPU).Seconds()/elapsed, "core-cpu-%")
	b.ReportMetric(100*botsCPU.Seconds()/elapsed, "bots-cpu-%")
	// The time the bots' threads were runnable but had no CPU: their core
	// is shared with whatever else runs on the machine.
	b.ReportMetric(100*botsWaited.Seconds()/elapsed, "bots-waited-%")
	b.ReportMetric(100*coreWaited.Seconds()/elapsed, "core-waited-%")
	h1, p1, rss1 := liveHeap(), pluginResident(b, srv), residentKiB()
	b.ReportMetric(float64(h1-h0)/float64(rooms)/1024, "KiB-heap/room")
	b.ReportMetric(p1*1024/float64(rooms), "KiB-plugin/room")
	b.ReportMetric(float64(rss1-rss0)/float64(rooms), "KiB-RSS/room")
	b.Logf("%d bots in %d rooms in %v (split cores: %v); %d players at the end, rooms %d; server heap %.1f → %.1f MiB, RSS %.1f → %.1f MiB, plugin %.1f MiB resident",
		n, rooms, connected.Round(time.Second), split, after.Players, after.Rooms, float64(h0)/(1<<20), float64(h1)/(1<<20),
		float64(rss0)/1024, float64(rss1)/1024, p1)
	b.Logf("joining:%s", progress)
	if after.Players != n {
		b.Errorf("%d players at the end of the window, want %d", after.Players, n)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// joinBound is how long the bots of the load benchmark have to be all in
// their rooms: 2 minutes and a second a room (200 rooms filled in under
// 4 minutes at a load average of 15).
func joinBound(rooms int) time.Duration { return 2*time.Minute + time.Duration(rooms)*time.Second }

// roomCounts is what the server says of its players: admitted, and in a
// room (the sum of the rooms' players in `rooms`).
type roomCounts struct {
	admitted, inRooms, rooms int
	ticks                    uint64
	tickSum                  float64 // AvgTickMS × Ticks
}

var roomPlayersRE = regexp.MustCompile(`players (\d+)/\d+`)

func countRooms(srv *host.Server) roomCounts {
	st := srv.Stats()
	c := roomCounts{admitted: st.Players, rooms: st.Rooms, ticks: st.Ticks, tickSum: st.AvgTickMS * float64(st.Ticks)}
	out, _ := srv.Exec("rooms")
	for _, m := range roomPlayersRE.FindAllStringSubmatch(out, -1) {
		k, _ := strconv.Atoi(m[1])
		c.inRooms += k
	}
	return c
}

// waitAllInRooms waits until n players are in rooms and returns how long
// that took and the counts every 20 s (a benchmark's log is cut at ten
// lines); it fails with them if the bots end first or joinBound passes.
func waitAllInRooms(b *testing.B, srv *host.Server, n, rooms int, exited chan error, out *syncbuf.Buffer) (time.Duration, string) {
	b.Helper()
	began := time.Now()
	last, lastAt := countRooms(srv), began
	var progress strings.Builder
	for {
		c := countRooms(srv)
		if c.inRooms >= n {
			fmt.Fprintf(&progress, "\n%v: all %d in %d rooms", time.Since(began).Round(100*time.Millisecond), n, c.rooms)
			return time.Since(began), progress.String()
		}
		select {
		case err := <-exited:
			exited <- err // for the deferred stop
			b.Fatalf("the bots ended before all were in (%v): %d of %d admitted, %d in %d rooms%s\nthe bots said:\n%s",
				err, c.admitted, n, c.inRooms, c.rooms, progress.String(), botsSaid(out.String()))
		default:
		}
		if now := time.Now(); now.Sub(lastAt) >= 20*time.Second {
			tick := 0.0
			if c.ticks > last.ticks {
				tick = (c.tickSum - last.tickSum) / float64(c.ticks-last.ticks)
			}
			fmt.Fprintf(&progress, "\n%v: %d admitted, %d in %d rooms (+%.1f/s); tick avg %.1f ms at %.1f ticks/s", now.Sub(began).Round(time.Second),
				c.admitted, c.inRooms, c.rooms, float64(c.inRooms-last.inRooms)/now.Sub(lastAt).Seconds(), tick,
				float64(c.ticks-last.ticks)/now.Sub(lastAt).Seconds())
			last, lastAt = c, now
		}
		if bound := joinBound(rooms); time.Since(began) > bound {
			st := srv.Stats()
			b.Fatalf("not every bot in a room after %v: %d of %d admitted, %d in %d rooms; room requests %d (refused %d, dropped %d)%s\nthe bots said:\n%s",
				bound, c.admitted, n, c.inRooms, c.rooms, st.RoomRequests, st.RoomRefused, st.RoomRequestsDropped, progress.String(), botsSaid(out.String()))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// botsSaid is the bots' output but their progress lines, the last
// excepted, and at most its last 40 lines.
func botsSaid(s string) string {
	var keep []string
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if i == len(lines)-1 || !strings.Contains(l, "bots in") || !strings.HasSuffix(l, "connecting...") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep[max(0, len(keep)-40):], "\n")
}
