package predict

import (
	"fmt"
	"math"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sparkhost/sparkhost/netstack/memlink"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// The prediction tests, on the in-memory link: a client and a
// server 100 ms apart each way, losing (and in one case duplicating and
// reordering) datagrams. Everything runs in a synctest bubble, so time is
// virtual: a 12-second match takes milliseconds, and the run is exactly
// reproducible from the link's seed.
//
// Each tick (50 Hz, so 100 ms is exactly five ticks) the driver lets the
// network deliver what is due, then
//   - the server applies every newly received input sequence once, in order,
//     with the same movement code, and (if it applied any) sends InputAck
//     with its authoritative state;
//   - the client reconciles every InputAck received, predicts one new input,
//     and sends a datagram carrying all its pending inputs (29 bytes each),
//     so an input is lost only if every datagram carrying it is.

// linkCase is one run.
type linkCase struct {
	link     memlink.Link
	seed     uint64
	push     wire.Vec3 // displacement the server adds once, at pushTick
	pushTick int
}

const (
	inputTicks = 600 // 12 s of play
	drainTicks = 200 // then at most 4 s for the link to settle
	period     = time.Second / tickRate
)

// linkRun is what a run observed.
type linkRun struct {
	corrections []float32 // LastCorrection of every reconciled ack, in order
	ackTicks    []int     // tick at which each was reconciled
	client      movement.State
	server      movement.State
	pending     int
	stats       Stats
	net         memlink.Stats
	gaps        int
	pushSeq     uint32 // last input the server had applied when it pushed
	lastAcked   uint32
}

func runLink(t *testing.T, c linkCase) linkRun {
	var out linkRun
	synctest.Test(t, func(t *testing.T) {
		n := memlink.NewNetwork(memlink.Config{Seed: c.seed, Default: c.link})
		srvConn, err := n.Attach(memlink.Addr(1, 27015))
		if err != nil {
			t.Fatal(err)
		}
		cliConn, err := n.Attach(memlink.Addr(2, 50000))
		if err != nil {
			t.Fatal(err)
		}
		srvIn, cliIn := pump(srvConn), pump(cliConn)

		pred := newPredictor(t, Config{})
		srv := authority{world: newWorld(t), state: spawn}
		sc := newScript(c.seed)
		var (
			dgram  []byte
			inputs []gamemsg.ClientInput
			pushed bool
		)
		for tick := 0; tick < inputTicks+drainTicks; tick++ {
			time.Sleep(period)
			synctest.Wait() // every datagram due by now is in an inbox

			applied := false
			drain(srvIn, func(b []byte) {
				for ; len(b) >= 29; b = b[29:] {
					in, err := gamemsg.ParseClientInput(b[:29])
					if err != nil {
						t.Fatalf("server: %v", err)
					}
					applied = srv.apply(t, in) || applied
				}
			})
			if c.push != (wire.Vec3{}) && tick == c.pushTick {
				// Carried by the next ack, so that no two acks report the
				// same sequence with different states.
				srv.state.Position = add(srv.state.Position, c.push)
				out.pushSeq, pushed = srv.last, true
			}
			if applied {
				ack := srv.state.Ack(srv.last)
				send(t, srvConn, gamemsg.AppendInputAck(dgram[:0], &ack), cliConn.AddrPort())
			}

			drain(cliIn, func(b []byte) {
				ack, err := gamemsg.ParseInputAck(b)
				if err != nil {
					t.Fatalf("client: %v", err)
				}
				ok, err := pred.Reconcile(ack)
				if err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
				if ok {
					out.corrections = append(out.corrections, pred.LastCorrection())
					out.ackTicks = append(out.ackTicks, tick)
				}
			})
			if tick < inputTicks {
				if _, err := pred.Predict(sc.next(tick)); err != nil {
					t.Fatal(err)
				}
			} else if pred.Pending() == 0 {
				if seq, _ := pred.LastAcked(); seq == srv.last {
					break // settled: everything sent was applied and acknowledged
				}
			}
			if pred.Pending() > 0 {
				dgram = dgram[:0]
				for _, in := range pred.AppendPending(inputs[:0]) {
					dgram = gamemsg.AppendClientInput(dgram, &in)
				}
				send(t, cliConn, dgram, srvConn.AddrPort())
			}
		}
		if c.push != (wire.Vec3{}) && !pushed {
			t.Fatal("the server never pushed")
		}
		out.client, out.server, out.pending = pred.State(), srv.state, pred.Pending()
		out.stats, out.net, out.gaps = pred.Stats(), n.Stats(), srv.gaps
		out.lastAcked, _ = pred.LastAcked()
		srvConn.Close()
		cliConn.Close()
	})
	return out
}

// pump copies every datagram c receives into a channel, until c closes.
func pump(c *memlink.Conn) <-chan []byte {
	ch := make(chan []byte, 4096)
	go func() {
		defer close(ch)
		buf := make([]byte, 65536)
		for {
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			ch <- append([]byte(nil), buf[:n]...)
		}
	}()
	return ch
}

// drain hands f every datagram already received, without waiting.
func drain(ch <-chan []byte, f func([]byte)) {
	for {
		select {
		case b := <-ch:
			f(b)
		default:
			return
		}
	}
}

func send(t *testing.T, c *memlink.Conn, b []byte, to netip.AddrPort) {
	if _, err := c.WriteToUDPAddrPort(b, to); err != nil {
		t.Fatalf("send: %v", err)
	}
}

func add(a, b wire.Vec3) wire.Vec3 { return wire.Vec3{X: a.X + b.X, Y: a.Y + b.Y, Z: a.Z + b.Z} }

var links = []struct {
	name string
	link memlink.Link
}{
	{"100ms 20% loss", memlink.Link{Latency: 100 * time.Millisecond, Loss: 0.2}},
	{"100ms±30ms 10% loss 10% duplicates", memlink.Link{Latency: 100 * time.Millisecond, Jitter: 30 * time.Millisecond, Loss: 0.1, Duplicate: 0.1}},
}

// checkSettled asserts what every run must end with: the client holds the
// server's state bit for bit, with nothing pending, and the link really lost
// datagrams on the way.
func checkSettled(t *testing.T, r linkRun) {
	t.Helper()
	if r.client != r.server || r.pending != 0 {
		t.Fatalf("not settled: client %+v server %+v pending %d", r.client, r.server, r.pending)
	}
	if r.net.Lost == 0 || r.gaps != 0 || r.stats.Dropped != 0 {
		t.Fatalf("lost %d datagrams, server skipped %d inputs, client dropped %d", r.net.Lost, r.gaps, r.stats.Dropped)
	}
	if len(r.corrections) < inputTicks/4 {
		t.Fatalf("only %d acks reconciled", len(r.corrections))
	}
}

func TestPredictionOverLossyLinkHasZeroCorrections(t *testing.T) {
	for _, l := range links {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", l.name, seed), func(t *testing.T) {
				r := runLink(t, linkCase{link: l.link, seed: seed})
				checkSettled(t, r)
				for i, c := range r.corrections {
					if c != 0 {
						t.Fatalf("ack %d (tick %d): correction %v, want exactly 0", i, r.ackTicks[i], c)
					}
				}
				if r.stats.Corrections != 0 || r.stats.MaxCorrection != 0 {
					t.Fatalf("stats %+v", r.stats)
				}
				t.Logf("%d acks, %d stale, %d inputs replayed, link lost %d of %d datagrams",
					r.stats.Acks, r.stats.StaleAcks, r.stats.Replayed, r.net.Lost, r.net.Sent)
			})
		}
	}
}

func TestPredictionConvergesAfterServerPush(t *testing.T) {
	push := wire.Vec3{X: 1.5, Z: -1}
	const pushTick = 300
	for _, l := range links {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", l.name, seed), func(t *testing.T) {
				r := runLink(t, linkCase{link: l.link, seed: seed, push: push, pushTick: pushTick})
				checkSettled(t, r)
				// Exactly one ack corrects: the first that carries the push.
				// Every later one agrees with the replayed prediction.
				first := -1
				for i, c := range r.corrections {
					if c == 0 {
						continue
					}
					if first >= 0 {
						t.Fatalf("ack %d (tick %d) corrected by %v after the push was absorbed at ack %d", i, r.ackTicks[i], c, first)
					}
					first = i
				}
				if first < 0 {
					t.Fatal("the push was never corrected")
				}
				// The push moved the player √(1.5²+1²) ≈ 1.80 units; the
				// replay from the pushed state keeps that offset unless a
				// wall intervened.
				c := r.corrections[first]
				want := math.Hypot(float64(push.X), float64(push.Z))
				if c <= 0 || float64(c) > want+1e-3 {
					t.Fatalf("correction %v, want (0, %.3f]", c, want)
				}
				// Bounded: no sooner than the shortest one-way trip allows, and
				// despite the link's loss within 20 ticks (400 ms).
				soonest := int((l.link.Latency - l.link.Jitter) / period)
				if lag := r.ackTicks[first] - pushTick; lag < soonest || lag > 20 {
					t.Fatalf("corrected %d ticks after the push", lag)
				}
				if r.stats.Corrections != 1 || r.stats.MaxCorrection != c {
					t.Fatalf("stats %+v", r.stats)
				}
				t.Logf("push absorbed by one correction of %.4f, %d ticks after it; %d acks, link lost %d of %d",
					c, r.ackTicks[first]-pushTick, r.stats.Acks, r.net.Lost, r.net.Sent)
			})
		}
	}
}
