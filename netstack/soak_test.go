package netstack_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/memlink"
	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// The full-stack soak: a real Server and Client (handshake, sealed frames,
// reliability, heartbeats) over the seeded in-memory link with 25% loss, 25%
// duplication, reordering and 100 ms ± 50 ms latency in both directions, in
// virtual time. Every Reliable message must arrive exactly once and every
// ReliableOrdered message exactly once and in order, contents verified.

const (
	soakReliable  wire.MessageType = 1000
	soakOrdered   wire.MessageType = 1001
	soakNoise     wire.MessageType = 1002
	soakPerStream                  = 2000 // messages per channel per direction
)

func soakRegistry(t *testing.T) *wire.Registry {
	reg := gamemsg.NewRegistry()
	for typ, ch := range map[wire.MessageType]wire.Channel{soakReliable: wire.Reliable, soakOrdered: wire.ReliableOrdered, soakNoise: wire.Unreliable} {
		err := reg.Register("soak", wire.Schema{ID: typ, Name: typ.String(), Direction: wire.BothDirections, Channel: ch,
			MinLen: 1, MaxLen: 1200, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true})
		if err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// soakStream is the deterministic sequence of messages one side sends on one
// channel: lengths 1..1200, contents from a seeded generator.
func soakStream(seed uint64) [][]byte {
	r := mrand.New(mrand.NewPCG(seed, 7))
	out := make([][]byte, soakPerStream)
	for i := range out {
		b := make([]byte, 1+r.IntN(1200))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		out[i] = b
	}
	return out
}

// soakReceiver checks one direction: reliable messages as a multiset (each
// expected payload consumed exactly once), ordered ones in sequence.
type soakReceiver struct {
	mu          sync.Mutex
	reliable    map[string]int
	relLeft     int
	ordered     [][]byte
	nextOrdered int
	errs        []string
	done        chan struct{}
}

func newSoakReceiver(rel, ord [][]byte) *soakReceiver {
	r := &soakReceiver{reliable: make(map[string]int), relLeft: len(rel), ordered: ord, done: make(chan struct{})}
	for _, p := range rel {
		r.reliable[string(p)]++
	}
	return r
}

func (r *soakReceiver) receive(typ wire.MessageType, payload []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch typ {
	case soakReliable:
		if r.reliable[string(payload)] == 0 {
			r.errs = append(r.errs, "reliable message delivered twice or never sent")
			return
		}
		r.reliable[string(payload)]--
		r.relLeft--
	case soakOrdered:
		if r.nextOrdered >= len(r.ordered) || !bytes.Equal(payload, r.ordered[r.nextOrdered]) {
			r.errs = append(r.errs, "ordered message out of order, repeated or corrupted at index "+itoa(r.nextOrdered))
			return
		}
		r.nextOrdered++
	default:
		return
	}
	if r.relLeft == 0 && r.nextOrdered == len(r.ordered) {
		select {
		case <-r.done:
		default:
			close(r.done)
		}
	}
}

func itoa(i int) string { return wire.MessageType(i).String() }

// sendPaced sends the streams in bursts so the local send queue never fills.
func sendPaced(send func(wire.MessageType, wire.Channel, []byte) error, rel, ord [][]byte, noise *mrand.Rand) error {
	for i := range rel {
		if err := send(soakReliable, wire.Reliable, rel[i]); err != nil {
			return err
		}
		if err := send(soakOrdered, wire.ReliableOrdered, ord[i]); err != nil {
			return err
		}
		if i%4 == 0 {
			_ = send(soakNoise, wire.Unreliable, make([]byte, 1+noise.IntN(1200)))
		}
		if i%20 == 19 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// The soak must pass whatever the seed: which packets the link loses is
// chance, so the reliability budget — how many times a packet may be sent
// before the connection gives up, and how long that may take — is computed
// from the run (the link's loss, the packets the soak sends) so that the
// chance of any packet exhausting it is below soakFailureOdds. The spec's
// budget (10 retransmissions) is sized for real links: at 25% loss each
// way one attempt fails (the packet or its ack lost) with a chance of
// 1-0.75² ≈ 0.44, so a packet exhausts 11 attempts with a chance of about
// 1.2e-4, and a soak of some 10⁴ packets did so for 8 seeds in 100.
const soakFailureOdds = 1e-6

// soakSeeds are the link seeds the soak runs with (a few in -short).
var soakSeeds = []uint64{20261204, 1, 2, 3, 51, 56, 71, 99}

func TestSoakLossyLink(t *testing.T) {
	seeds := soakSeeds
	if testing.Short() {
		seeds = seeds[:3]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { soakLossyLink(t, seed) })
	}
}

// soakBudget is the reliability budget of a soak over a link that loses
// loss of the datagrams each way, sending at most packets reliable packets:
// the retransmissions that make a packet fail with a chance below
// soakFailureOdds/packets, and the time they take at the longest backoff
// (reliable.MaxRTO, doubled up to 8x), twice over for the rounds a
// retransmission is deferred to a probe.
func soakBudget(loss float64, packets int) (retx int, timeout time.Duration) {
	attemptFails := 1 - (1-loss)*(1-loss) // the packet or its ack lost (redundant acks only help)
	attempts := int(math.Ceil(math.Log(soakFailureOdds/float64(packets)) / math.Log(attemptFails)))
	retx = max(attempts-1, reliable.DefaultMaxRetransmissions)
	for k := range retx + 1 {
		timeout += reliable.MaxRTO * time.Duration(min(1<<k, 8))
	}
	return retx, 2 * timeout
}

func soakLossyLink(t *testing.T, seed uint64) {
	synctest.Test(t, func(t *testing.T) {
		link := memlink.Link{Loss: 0.25, Duplicate: 0.25, Latency: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}
		// At most 2 fragments per message (1..1200 bytes), 4 reliable
		// streams, and a few messages of the session's own.
		retx, timeout := soakBudget(link.Loss, 2*4*soakPerStream+1000)
		rel := reliable.Config{MaxRetransmissions: retx, ConnectionTimeout: timeout}
		srvConn, cliConn := memlink.Pair(seed, link, link)
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		reg := soakRegistry(t)

		toServer := newSoakReceiver(soakStream(1), soakStream(2))
		toClient := newSoakReceiver(soakStream(3), soakStream(4))

		srv, err := netstack.NewServer(netstack.ServerConfig{
			Conn: srvConn, Identity: priv, Registry: reg,
			// The spec's 10 s would close the connection by design under 25%
			// loss: the budget above sets it.
			Timeout: timeout, Reliable: rel,
		})
		if err != nil {
			t.Fatal(err)
		}
		recv := func(id uint32, h *wire.Header, p []byte) { toServer.receive(h.Type, p) }
		srv.Handle(soakReliable, recv)
		srv.Handle(soakOrdered, recv)
		srv.Start()
		defer srv.Close()

		// Virtual time: a bound of an hour costs no wall time. (2 minutes,
		// the bound before, was near the 1m45s a soak takes, so a seed whose
		// losses came late timed out though nothing was wrong.)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		cli, err := netstack.Dial(ctx, netstack.ClientConfig{
			Server: srvConn.AddrPort(), Name: "soak", Pin: srv.Pin(), Conn: cliConn,
			Registry: reg, Timeout: timeout, Reliable: rel,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		go func() {
			for {
				m, err := cli.Receive(ctx)
				if err != nil {
					return
				}
				toClient.receive(m.Header.Type, m.Payload)
			}
		}()

		start := time.Now()
		var wg sync.WaitGroup
		wg.Add(2)
		var cliErr, srvErr error
		go func() {
			defer wg.Done()
			cliErr = sendPaced(cli.Send, soakStream(1), soakStream(2), mrand.New(mrand.NewPCG(5, 5)))
		}()
		go func() {
			defer wg.Done()
			id := cli.ID()
			srvErr = sendPaced(func(typ wire.MessageType, ch wire.Channel, p []byte) error {
				return srv.Send(id, typ, ch, p)
			}, soakStream(3), soakStream(4), mrand.New(mrand.NewPCG(6, 6)))
		}()
		wg.Wait()
		if cliErr != nil || srvErr != nil {
			t.Fatalf("send: client %v, server %v", cliErr, srvErr)
		}
		for name, r := range map[string]*soakReceiver{"server": toServer, "client": toClient} {
			select {
			case <-r.done:
			case <-ctx.Done():
				reason, detail := cli.CloseReason()
				r.mu.Lock()
				rel, ord := r.relLeft, len(r.ordered)-r.nextOrdered
				r.mu.Unlock() // the receiving goroutine must be able to end, or the bubble never does
				t.Fatalf("%s: timed out with %d reliable and %d ordered messages missing (client closed: %v %s)", name, rel, ord, reason, detail)
			}
			if len(r.errs) > 0 {
				t.Fatalf("%s: %d errors, first: %s", name, len(r.errs), r.errs[0])
			}
		}
		st := cli.Stats()
		t.Logf("budget %d retransmissions in %v; virtual time %v; client: sent %d packets, %d retransmissions, %d security drops; loss estimate %.2f",
			retx, timeout, time.Since(start), st.PacketsSent, st.Retransmissions, st.SecurityDrops, st.PacketLoss)
		select {
		case <-cli.Done():
			reason, detail := cli.CloseReason()
			t.Fatalf("connection closed during soak: %v %s", reason, detail)
		default:
		}
	})
}
