package deathmatch_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/testplugin"
)

// BenchmarkDeathmatch64 is the load test of docs/performance.md: 64 bots
// in one free-for-all on arena at 60 Hz, on this machine. The server runs
// in this process (its stats are read directly), the module in its plugin
// subprocess, the bots in a `sparkhost bots --count 64` subprocess — three
// processes sharing the machine, as on a single-box test rig. Once every
// bot is in and 3 s have passed, it measures for 10 s the server's tick
// (the average over the window, and the highest of the per-second peaks),
// what the server sent and received per client per second (wire bytes:
// UDP payloads, without IP/UDP headers), the datagrams sent per client per
// tick and the messages packed in each, and how many bodies were alive on
// average (dm_status, once a second).
//
//	shipped: the module's defaults (four hits kill, 3 s to respawn): on a
//	         map made for eight, most of the 64 are dead at any moment;
//	sturdy:  a hit takes 1 health point: nearly all 64 are alive and
//	         moving, the worst case for replication.
//
//	go test -run XXX -bench Deathmatch64 -benchtime 1x ./modules/deathmatch/
func BenchmarkDeathmatch64(b *testing.B) {
	b.Run("shipped", func(b *testing.B) { benchDeathmatch(b, "") })
	b.Run("sturdy", func(b *testing.B) { benchDeathmatch(b, "[weapon]\ndamage = 1\n") })
}

func benchDeathmatch(b *testing.B, dmConf string) {
	const n = 64
	const settle, steady = 3 * time.Second, 10 * time.Second
	srv := startServer(b, dmConf, func(c *config.Config) {
		c.Server.MaxClients = n
		c.Match.ScoreLimit, c.Match.TimeLimitMinutes = 0, 0
		c.Match.WarmupSeconds = 0
		c.Match.MapRotation = []string{"arena"}
	})
	bin := testplugin.Build(b, "./cmd/sparkhost")
	var out strings.Builder
	bots := exec.Command(bin, "bots", "--count", strconv.Itoa(n), "--server", srv.Addr().String(),
		"--pin", srv.Pin(), "--duration", "3m", "--seed", "1")
	bots.Stdout, bots.Stderr = &out, &out
	if err := bots.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- bots.Wait() }()
	stopped := false
	stopBots := func() {
		if stopped {
			return
		}
		stopped = true
		_ = bots.Process.Signal(syscall.SIGINT) // they leave and print their summary
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = bots.Process.Kill()
			<-exited
			b.Errorf("sparkhost bots did not stop within 30 s of SIGINT")
		}
	}
	defer stopBots()

	for deadline := time.Now().Add(90 * time.Second); srv.Stats().Players < n; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d bots in after 90 s\n%s", srv.Stats().Players, n, out.String())
		}
	}
	time.Sleep(settle)
	before, t0 := srv.Stats(), time.Now()
	b.ResetTimer()
	var peak float64
	minRate := before.CurrentTickRate
	var bodies, samples int
	for end, next := t0.Add(steady), t0; time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		st := srv.Stats()
		peak = max(peak, st.RecentPeakTickMS)
		minRate = min(minRate, st.CurrentTickRate)
		if time.Now().After(next) {
			next = next.Add(time.Second)
			if k, ok := aliveBodies(srv.Exec("dm_status")); ok {
				bodies, samples = bodies+k, samples+1
			}
		}
	}
	after, elapsed := srv.Stats(), time.Since(t0).Seconds()
	b.StopTimer()
	if after.Players != n {
		b.Errorf("%d players at the end of the window, want %d", after.Players, n)
	}
	ticks := after.Ticks - before.Ticks
	avg := (after.AvgTickMS*float64(after.Ticks) - before.AvgTickMS*float64(before.Ticks)) / float64(ticks)
	perClient := float64(after.BytesOut-before.BytesOut) / n / elapsed
	inPerClient := float64(after.BytesIn-before.BytesIn) / n / elapsed
	datagrams := float64(after.Net.PacketsSent - before.Net.PacketsSent)
	messages := float64(after.Net.MessagesSent - before.Net.MessagesSent)
	stopBots()

	kills, firing, hits := botTotals(out.String())
	b.ReportMetric(avg, "tick-avg-ms")
	b.ReportMetric(peak, "tick-peak-ms")
	b.ReportMetric(float64(ticks)/elapsed, "ticks/s")
	b.ReportMetric(minRate, "min-tick-rate")
	b.ReportMetric(perClient, "out-B/client/s")
	b.ReportMetric(inPerClient, "in-B/client/s")
	b.ReportMetric(datagrams/n/float64(ticks), "out-datagrams/client/tick")
	if datagrams > 0 {
		b.ReportMetric(messages/datagrams, "msgs/datagram")
	}
	if samples > 0 {
		b.ReportMetric(float64(bodies)/float64(samples), "bodies")
	}
	b.Logf("%d ticks in %.2f s; server peak since start %.2f ms; bots over the whole run: %d inputs firing, %d hits, %d kills",
		ticks, elapsed, after.PeakTickMS, firing, hits, kills)
	if kills == 0 && dmConf == "" {
		b.Errorf("no bot killed anybody:\n%s", out.String())
	}
	if os.Getenv("SPARK_BENCH_BOTS") != "" {
		b.Logf("sparkhost bots:\n%s", out.String())
	}
}

// aliveBodies reads "bodies N;" from dm_status.
func aliveBodies(status string, err error) (int, bool) {
	_, rest, ok := strings.Cut(status, "\nbodies ")
	if err != nil || !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.Fields(rest)[0], ";"))
	return n, err == nil
}

// botTotals adds up the kills, firing and hits columns of the bots'
// summary.
func botTotals(out string) (kills, firing, hits int) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 11 || !strings.HasPrefix(f[0], "bot") || f[0] == "bot" {
			continue
		}
		s, _ := strconv.Atoi(f[5])
		h, _ := strconv.Atoi(f[6])
		k, _ := strconv.Atoi(f[7])
		firing, hits, kills = firing+s, hits+h, kills+k
	}
	return kills, firing, hits
}
