package netstack_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
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

// The packed soak: protocol v4's data plane under the same lossy link as
// TestSoakLossyLink (25% loss, 25% duplication, reordering, 100 ms ± 50 ms
// each way, virtual time), with bursts of many small messages per flush
// (packed several to a datagram) and messages up to 20 kB on both reliable
// channels (fragmented into up to 18 fragments of a 1200-byte datagram).
// Every Reliable message must arrive exactly once, every ReliableOrdered
// one exactly once and in order, contents verified, in both directions.

const (
	packedPerStream = 1500
	packedMaxLen    = 20000
)

func packedRegistry(t *testing.T) *wire.Registry {
	reg := gamemsg.NewRegistry()
	for typ, ch := range map[wire.MessageType]wire.Channel{soakReliable: wire.Reliable, soakOrdered: wire.ReliableOrdered, soakNoise: wire.Unreliable} {
		max := uint32(packedMaxLen)
		if ch == wire.Unreliable {
			max = 1000
		}
		err := reg.Register("soak", wire.Schema{ID: typ, Name: "Soak" + ch.String(), Direction: wire.BothDirections, Channel: ch,
			MinLen: 1, MaxLen: max, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true})
		if err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// packedStream mixes small messages (most) with large ones (every tenth
// is 2..20 kB, so fragmented).
func packedStream(seed uint64) [][]byte {
	r := mrand.New(mrand.NewPCG(seed, 11))
	out := make([][]byte, packedPerStream)
	for i := range out {
		n := 1 + r.IntN(60)
		if i%10 == 3 {
			n = 2000 + r.IntN(packedMaxLen-2000)
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		out[i] = b
	}
	return out
}

// sendBursts sends the streams ten messages of each channel at a time, then
// flushes once (a tick's worth) and pauses; a full send queue (the lossy
// link holds the window back) makes it wait and try again.
func sendBursts(send func(wire.MessageType, wire.Channel, []byte) error, flush func(), rel, ord [][]byte, noise *mrand.Rand) error {
	retry := func(typ wire.MessageType, ch wire.Channel, p []byte) error {
		for {
			err := send(typ, ch, p)
			if !errors.Is(err, reliable.ErrSendQueueFull) {
				return err
			}
			flush()
			time.Sleep(100 * time.Millisecond)
		}
	}
	for i := range rel {
		if err := retry(soakReliable, wire.Reliable, rel[i]); err != nil {
			return err
		}
		if err := retry(soakOrdered, wire.ReliableOrdered, ord[i]); err != nil {
			return err
		}
		_ = send(soakNoise, wire.Unreliable, make([]byte, 1+noise.IntN(1000)))
		if i%10 == 9 {
			flush()
			time.Sleep(50 * time.Millisecond)
		}
	}
	flush()
	return nil
}

func TestSoakPackedFragmentedLossyLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := memlink.Link{Loss: 0.25, Duplicate: 0.25, Latency: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}
		srvConn, cliConn := memlink.Pair(20261201, link, link)
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		reg := packedRegistry(t)

		toServer := newSoakReceiver(packedStream(1), packedStream(2))
		toClient := newSoakReceiver(packedStream(3), packedStream(4))

		srv, err := netstack.NewServer(netstack.ServerConfig{
			Conn: srvConn, Identity: priv, Registry: reg, Timeout: time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		recv := func(id uint32, h *wire.Header, p []byte) { toServer.receive(h.Type, p) }
		srv.Handle(soakReliable, recv)
		srv.Handle(soakOrdered, recv)
		srv.Start()
		defer srv.Close()

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cli, err := netstack.Dial(ctx, netstack.ClientConfig{
			Server: srvConn.AddrPort(), Name: "soak", Pin: srv.Pin(), Conn: cliConn,
			Registry: reg, Timeout: time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		if cli.Protocol() != 4 {
			t.Fatalf("protocol v%d, want v4", cli.Protocol())
		}
		go func() {
			for {
				m, err := cli.Receive(ctx)
				if err != nil {
					return
				}
				toClient.receive(m.Header.Type, m.Payload)
			}
		}()

		var wg sync.WaitGroup
		wg.Add(2)
		var cliErr, srvErr error
		go func() {
			defer wg.Done()
			cliErr = sendBursts(cli.Send, cli.Flush, packedStream(1), packedStream(2), mrand.New(mrand.NewPCG(5, 5)))
		}()
		go func() {
			defer wg.Done()
			id := cli.ID()
			srvErr = sendBursts(func(typ wire.MessageType, ch wire.Channel, p []byte) error {
				return srv.Send(id, typ, ch, p)
			}, srv.Flush, packedStream(3), packedStream(4), mrand.New(mrand.NewPCG(6, 6)))
		}()
		wg.Wait()
		if cliErr != nil || srvErr != nil {
			t.Fatalf("send: client %v, server %v", cliErr, srvErr)
		}
		for name, r := range map[string]*soakReceiver{"server": toServer, "client": toClient} {
			select {
			case <-r.done:
			case <-ctx.Done():
				r.mu.Lock()
				t.Fatalf("%s: timed out with %d reliable and %d ordered messages missing", name, r.relLeft, len(r.ordered)-r.nextOrdered)
			}
			if len(r.errs) > 0 {
				t.Fatalf("%s: %d errors, first: %s", name, len(r.errs), r.errs[0])
			}
		}
		cs, ss := cli.Stats(), srv.Stats()
		t.Logf("client sent %d messages in %d datagrams (%d retransmissions); server %d in %d",
			cs.MessagesSent, cs.PacketsSent, cs.Retransmissions, ss.MessagesSent, ss.PacketsSent)
		for name, st := range map[string]netstack.Stats{"client": cs, "server": ss} {
			if st.MessagesSent < 2*st.PacketsSent {
				t.Errorf("%s: %d messages in %d datagrams: not packed", name, st.MessagesSent, st.PacketsSent)
			}
			if st.MessagesRefused != 0 {
				t.Errorf("%s refused %d messages (%v)", name, st.MessagesRefused, st.RefusedBy)
			}
		}
		select {
		case <-cli.Done():
			reason, detail := cli.CloseReason()
			t.Fatalf("connection closed during soak: %v %s", reason, detail)
		default:
		}
	})
}
