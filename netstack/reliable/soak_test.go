package reliable_test

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sparkhost/sparkhost/netstack/memlink"
	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// soakMessages is how many messages each side sends on each reliable channel.
const soakMessages = 3000

// TestSoakLossyLink runs two Endpoints over a memlink pair in virtual time,
// each side sending soakMessages on Reliable and on ReliableOrdered plus
// Unreliable noise, over links with loss, duplication and 100±50 ms latency
// (which reorders). Every Reliable message must arrive exactly once and every
// ReliableOrdered message exactly once and in order, content intact, with no
// delivery failure.
//
// The 25% cases raise the connection timeout. §7's timers fit about six
// attempts of a packet into the 10 s connection timeout (RTO ≈ 300–400 ms
// here, backed off ×1, 2, 4, 8, 8…). An attempt fails when the data or both
// copies of its Ack are lost: 0.25 + 0.75·0.25² ≈ 0.30 at 25% loss, so
// 0.30^6 ≈ 7·10^-4 per packet, and among ~15,000 packets a few legitimately
// exhaust the timeout; the engine then reports ErrDeliveryFailed as §7
// requires. These cases test correctness under heavy loss, so the 10
// retransmissions (≈ 25–35 s at this RTO) are the limit instead: 0.30^11 ≈
// 2·10^-6 per packet. The 10% case runs the spec defaults unchanged
// (≈ 0.11^6 ≈ 2·10^-6 per packet, so about 2% of such 12,000-message runs
// see one failure; this seed is not one of them, and runs are reproducible).
func TestSoakLossyLink(t *testing.T) {
	heavy := memlink.Link{Loss: 0.25, Duplicate: 0.25, Latency: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}
	moderate := memlink.Link{Loss: 0.10, Duplicate: 0.10, Latency: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}
	tests := []struct {
		name string
		seed uint64
		link memlink.Link
		cfg  reliable.Config
	}{
		{"loss25_dup25_seed1", 1, heavy, reliable.Config{ConnectionTimeout: time.Minute}},
		{"loss25_dup25_seed2", 2, heavy, reliable.Config{ConnectionTimeout: time.Minute}},
		{"loss10_dup10_defaults", 3, moderate, reliable.Config{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wall := time.Now()
			var virtual time.Duration
			synctest.Test(t, func(t *testing.T) {
				virtual = runSoak(t, tc.seed, tc.link, tc.cfg)
			})
			t.Logf("virtual %v, wall %v", virtual.Round(time.Millisecond), time.Since(wall).Round(time.Millisecond))
		})
	}
}

func runSoak(t *testing.T, seed uint64, link memlink.Link, cfg reliable.Config) time.Duration {
	a, b := memlink.Pair(seed, link, link)
	start := time.Now()
	pa := newSoakPeer(t, "server", a, b.AddrPort(), cfg, seed*10+1)
	pb := newSoakPeer(t, "client", b, a.AddrPort(), cfg, seed*10+2)
	pb.senderID = 7

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range []*soakPeer{pa, pb} {
		wg.Go(func() { p.run(stop) })
	}
	// Wait for all four completions; a failed peer or a virtual-time budget
	// aborts, since the survivor could otherwise wait forever.
	limit := time.After(10 * time.Minute)
wait:
	for _, done := range []chan struct{}{pa.sendDone, pa.recvDone, pb.sendDone, pb.recvDone} {
		select {
		case <-done:
		case <-pa.dead:
			break wait
		case <-pb.dead:
			break wait
		case <-limit:
			t.Errorf("soak incomplete after 10 virtual minutes")
			break wait
		}
	}
	elapsed := time.Since(start)
	close(stop)
	a.Close()
	b.Close()
	wg.Wait()

	net := a.Network().Stats()
	t.Logf("network: sent %d lost %d duplicated %d delivered %d queueDrops %d",
		net.Sent, net.Lost, net.Duplicated, net.Delivered, net.QueueDrops)
	for _, p := range []*soakPeer{pa, pb} {
		s := p.ep.Stats()
		t.Logf("%s: sent %d retransmissions %d (%.1f%%) acksSent %d dupsReceived %d delivered %d unreliable %d RTO %v SRTT %v RTTVar %v samples %d ackRangesDropped %d",
			p.name, s.Sent, s.Retransmissions, 100*float64(s.Retransmissions)/float64(s.Sent), s.AcksSent,
			s.DuplicatesReceived, s.Delivered, p.unreliableGot, s.RTO, s.SRTT, s.RTTVar, s.RTTSamples, s.AckRangesDropped)
		if s.ReorderDropped != 0 || s.WindowDropped != 0 || s.Invalid != 0 {
			t.Errorf("%s: reorderDropped %d windowDropped %d invalid %d; a sender within its window never triggers these",
				p.name, s.ReorderDropped, s.WindowDropped, s.Invalid)
		}
		if p.unreliableGot == 0 {
			t.Errorf("%s: no unreliable noise arrived", p.name)
		}
	}
	return elapsed
}

// soakPeer drives one Endpoint the way the server or client integration will:
// one goroutine owns the Endpoint; a reader goroutine only forwards datagrams.
type soakPeer struct {
	t        *testing.T
	name     string
	conn     *memlink.Conn
	remote   netip.AddrPort
	ep       *reliable.Endpoint
	rng      *rand.Rand
	senderID uint32
	in       chan []byte
	pkt      []byte

	sentCount   [3]int // by channel
	noiseAt     time.Time
	gotReliable [soakMessages]bool
	nReliable   int
	nextOrdered int

	unreliableGot            int
	sendDone, recvDone, dead chan struct{}
	sendClosed, recvClosed   bool
}

func newSoakPeer(t *testing.T, name string, c *memlink.Conn, remote netip.AddrPort, cfg reliable.Config, seed uint64) *soakPeer {
	return &soakPeer{
		t: t, name: name, conn: c, remote: remote,
		ep:  reliable.New(cfg, time.Now()),
		rng: rand.New(rand.NewPCG(seed, seed^0xABCDEF)),
		in:  make(chan []byte, 64),
		pkt: make([]byte, 0, wire.MaxDatagram),

		sendDone: make(chan struct{}), recvDone: make(chan struct{}), dead: make(chan struct{}),
	}
}

func (p *soakPeer) run(stop <-chan struct{}) {
	go p.read(stop)
	defer p.ep.Close()
	for {
		now := time.Now()
		p.feed(now)
		if err := p.ep.Poll(now, p.emit); err != nil {
			p.t.Errorf("%s: %v", p.name, err)
			close(p.dead)
			return
		}
		p.checkDone()
		wake := p.noiseAt
		if d := p.ep.NextDeadline(); !d.IsZero() && d.Before(wake) {
			wake = d
		}
		timer := time.NewTimer(time.Until(wake))
		select {
		case b := <-p.in:
			p.handle(b)
		drain: // the whole receive pass, then one Poll answers it
			for {
				select {
				case b := <-p.in:
					p.handle(b)
				default:
					break drain
				}
			}
		case <-timer.C:
		case <-stop:
			timer.Stop()
			return
		}
		timer.Stop()
	}
}

func (p *soakPeer) read(stop <-chan struct{}) {
	for {
		buf := make([]byte, 2048)
		n, _, err := p.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		select {
		case p.in <- buf[:n]:
		case <-stop:
			return
		}
	}
}

// feed keeps a few dozen messages queued, alternating channels at random, and
// sends an unreliable packet every 20 ms.
func (p *soakPeer) feed(now time.Time) {
	for p.ep.Stats().Queued < 32 {
		ch := wire.Reliable
		if p.rng.IntN(2) == 0 {
			ch = wire.ReliableOrdered
		}
		if p.sentCount[ch] == soakMessages {
			ch = 3 - ch
		}
		if p.sentCount[ch] == soakMessages {
			break
		}
		msg := makeMessage(p.rng, uint32(p.sentCount[ch]), ch)
		if err := p.ep.Send(gamemsg.TypeEntityRPC, ch, msg, now); err != nil {
			p.t.Errorf("%s: Send: %v", p.name, err) // Poll reports the failure
			return
		}
		p.sentCount[ch]++
	}
	if !now.Before(p.noiseAt) {
		h := wire.Header{Type: gamemsg.TypeEntityStateUpdate, Channel: wire.Unreliable, Sequence: p.ep.NextUnreliableSequence()}
		noise := make([]byte, 1+p.rng.IntN(200))
		p.emit(&h, noise)
		p.noiseAt = now.Add(20 * time.Millisecond)
	}
}

func (p *soakPeer) emit(h *wire.Header, payload []byte) {
	h.SenderID = p.senderID
	h.Timestamp = float32(time.Now().UnixMilli()%1e6) / 1000
	p.pkt = wire.AppendPacket(p.pkt[:0], h, payload)
	if _, err := p.conn.WriteToUDPAddrPort(p.pkt, p.remote); err != nil {
		p.t.Errorf("%s: write: %v", p.name, err)
	}
}

func (p *soakPeer) handle(b []byte) {
	h, payload, err := wire.ParsePacket(b)
	if err != nil {
		p.t.Errorf("%s: unparsable datagram: %v", p.name, err)
		return
	}
	now := time.Now()
	if h.Type == wire.TypeAck {
		a, err := reliable.ParseAck(payload)
		if err != nil {
			p.t.Errorf("%s: %v", p.name, err)
			return
		}
		p.ep.OnAck(a, now)
		return
	}
	if !p.ep.Receive(&h, payload, now, p.deliver) {
		p.t.Errorf("%s: packet seq %d ord %d dropped unacked", p.name, h.Sequence, h.OrderedSequence)
	}
}

func (p *soakPeer) deliver(h *wire.Header, payload []byte) {
	if h.Channel == wire.Unreliable {
		p.unreliableGot++
		return
	}
	id, ch, ok := checkMessage(payload)
	switch {
	case !ok || ch != h.Channel || id >= soakMessages:
		p.t.Errorf("%s: corrupt message (id %d, channel %v in a %v packet)", p.name, id, ch, h.Channel)
	case ch == wire.Reliable && p.gotReliable[id]:
		p.t.Errorf("%s: Reliable message %d delivered twice", p.name, id)
	case ch == wire.Reliable:
		p.gotReliable[id] = true
		p.nReliable++
	case int(id) != p.nextOrdered:
		p.t.Errorf("%s: ReliableOrdered message %d delivered, expected %d", p.name, id, p.nextOrdered)
	default:
		p.nextOrdered++
	}
}

func (p *soakPeer) checkDone() {
	s := p.ep.Stats()
	if !p.sendClosed && p.sentCount[wire.Reliable] == soakMessages && p.sentCount[wire.ReliableOrdered] == soakMessages &&
		s.InFlight == 0 && s.Queued == 0 {
		p.sendClosed = true
		close(p.sendDone)
	}
	if !p.recvClosed && p.nReliable == soakMessages && p.nextOrdered == soakMessages {
		p.recvClosed = true
		close(p.recvDone)
	}
}

// makeMessage builds id u32, channel u8, FNV-64a of the body, then 1..1200
// random body bytes.
func makeMessage(rng *rand.Rand, id uint32, ch wire.Channel) []byte {
	body := make([]byte, 1+rng.IntN(1200))
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	h := fnv.New64a()
	h.Write(body)
	msg := binary.LittleEndian.AppendUint32(nil, id)
	msg = append(msg, byte(ch))
	msg = binary.LittleEndian.AppendUint64(msg, h.Sum64())
	return append(msg, body...)
}

func checkMessage(m []byte) (id uint32, ch wire.Channel, ok bool) {
	if len(m) < 14 {
		return 0, 0, false
	}
	h := fnv.New64a()
	h.Write(m[13:])
	return binary.LittleEndian.Uint32(m), wire.Channel(m[4]), h.Sum64() == binary.LittleEndian.Uint64(m[5:])
}
