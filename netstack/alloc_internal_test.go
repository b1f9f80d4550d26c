package netstack

import (
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/memlink"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// sessionKit is what building sessions without sockets takes: a memlink
// transport, the default server channel config, a peer address and two
// keys, the server's send key being the client's receive key.
type sessionKit struct {
	conn   transport.Transport
	cfg    channelConfig
	addr   netip.AddrPort
	k1, k2 [32]byte
}

func newSessionKit(t testing.TB) *sessionKit {
	t.Helper()
	mc, err := memlink.NewNetwork(memlink.Config{}).Attach(memlink.Addr(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	k := &sessionKit{conn: transport.FromPacketConn(mc), addr: netip.MustParseAddrPort("127.0.0.2:5000")}
	k.k1[0], k.k2[0] = 1, 2
	scfg := ServerConfig{}
	scfg.populate()
	k.cfg = scfg.channelConfig(k.conn.MaxDatagram())
	return k
}

// server and client make the two ends of a session begun at now, with cfg
// (nil: the kit's).
func (k *sessionKit) server(version uint16, now time.Time, cfg *channelConfig) *session {
	if cfg == nil {
		cfg = &k.cfg
	}
	return newSession(k.conn, k.addr, 7, true, version, now, now, sessionKeys{send: k.k1, recv: k.k2}, cfg)
}

func (k *sessionKit) client(version uint16, now time.Time, cfg *channelConfig) *session {
	if cfg == nil {
		cfg = &k.cfg
	}
	return newSession(k.conn, k.addr, 7, false, version, now, now, sessionKeys{send: k.k2, recv: k.k1}, cfg)
}

// sessionPair is a server and a client session keyed to each other (v4),
// without sockets: a flush fills a batch, whose datagrams the other side
// receives directly.
func sessionPair(t testing.TB) (srv, cli *session) {
	t.Helper()
	k := newSessionKit(t)
	now := time.Now()
	return k.server(handshake.ProtocolVersion4, now, nil), k.client(handshake.ProtocolVersion4, now, nil)
}

// deliverBatch has s receive every datagram of b at now, as the other end
// of a sessionPair, and empties b.
func deliverBatch(s *session, b *datagramBatch, reg validator, now time.Time, deliver deliverFunc) {
	for _, sp := range b.spans {
		s.receiveLocked(reg, b.buf[sp.start:sp.end], now, deliver, nil)
	}
	b.reset()
}

// TestPackedPathAllocatesNothing: a tick's worth of messages to one client
// — unreliable updates, a reliable ordered one — queued, flushed (packed
// and sealed), received (opened, checked, validated, acknowledged,
// delivered) and the acks returned, allocates nothing in steady state.
func TestPackedPathAllocatesNothing(t *testing.T) {
	if RaceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	srv, cli := sessionPair(t)
	reg := gamemsg.NewRegistry()
	// entity 5, dirty_mask bit 0, a vec3: structurally valid (the client
	// checks fields against GameStateSync's schemas, above the transport).
	update := []byte{5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3F, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40}
	destroy := []byte{9, 0, 0, 0}
	var sb, cb datagramBatch
	delivered := 0
	deliver := func(*wire.Header, []byte) { delivered++ }
	step := func() {
		now := time.Now()
		for range 20 {
			if err := srv.sendLocked(gamemsg.TypeEntityStateUpdate, wire.Unreliable, update, now); err != nil {
				t.Fatal(err)
			}
		}
		if err := srv.sendLocked(gamemsg.TypeEntityDestroy, wire.ReliableOrdered, destroy, now); err != nil {
			t.Fatal(err)
		}
		srv.flushLocked(now, &sb)
		deliverBatch(cli, &sb, reg, now, deliver)
		cli.flushLocked(now.Add(20*time.Millisecond), &cb) // the acks
		deliverBatch(srv, &cb, reg, now.Add(20*time.Millisecond), deliver)
	}
	for range 100 {
		step()
	}
	delivered = 0
	if n := testing.AllocsPerRun(200, step); n != 0 {
		t.Fatalf("%.1f allocations per tick's flush and receive", n)
	}
	if delivered < 200*21 {
		t.Fatalf("%d messages delivered in 200 ticks", delivered)
	}
	if st := srv.ctr.snapshot(); st.MessagesSent < 2*st.PacketsSent {
		t.Fatalf("%d messages in %d datagrams", st.MessagesSent, st.PacketsSent)
	}
}
