package netstack_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Connection migration over real UDP on loopback (docs/protocol.md §4.1):
// a client that moves to a new socket keeps its session and its streams;
// nothing that does not authenticate moves a session; what the server sends
// to an unproved address stays within three times what it received from
// there; an address that never answers is abandoned.

// streamRecorder checks one direction of a reliable ordered stream: every
// message exactly once, in order.
type streamRecorder struct {
	mu   sync.Mutex
	next uint32
	errs []string
}

func (r *streamRecorder) got(payload []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := binary.LittleEndian.Uint32(payload)
	if n != r.next {
		r.errs = append(r.errs, "got message "+itoa(int(n))+", want "+itoa(int(r.next)))
	}
	r.next = n + 1
}

func (r *streamRecorder) count() (uint32, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next, append([]string(nil), r.errs...)
}

func streamPayload(i uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, i)
	return append(b, bytes.Repeat([]byte{byte(i)}, 40)...)
}

// dialMigrating connects a real client and waits until the server gave it
// its connection id.
func dialMigrating(t *testing.T, srv *netstack.Server, mod func(*netstack.ClientConfig)) *netstack.Client {
	t.Helper()
	cfg := gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: "mover", Pin: srv.Pin(), Registry: soakRegistry(t)})
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cli, err := netstack.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestMigrationRebindKeepsStreams(t *testing.T) {
	ev := newEvents()
	var moves []netstack.Migration
	var movesMu sync.Mutex
	toServer, toClient := &streamRecorder{}, &streamRecorder{}
	srv := quietServer(t, func(c *netstack.ServerConfig) {
		c.Registry = soakRegistry(t)
		ev.hook(c)
		c.OnMigrated = func(m netstack.Migration) { movesMu.Lock(); moves = append(moves, m); movesMu.Unlock() }
	})
	srv.Handle(soakOrdered, func(_ uint32, _ *wire.Header, p []byte) { toServer.got(p) })
	cli := dialMigrating(t, srv, nil)
	eventually(t, "the connection id", cli.MigrationReady)
	go func() {
		for {
			m, err := cli.Receive(context.Background())
			if err != nil {
				return
			}
			if m.Header.Type == soakOrdered {
				toClient.got(m.Payload)
			}
		}
	}()

	const total, rebinds = 900, 3
	for i := range uint32(total) {
		if err := cli.Send(soakOrdered, wire.ReliableOrdered, streamPayload(i)); err != nil {
			t.Fatal(err)
		}
		if err := srv.Send(cli.ID(), soakOrdered, wire.ReliableOrdered, streamPayload(i)); err != nil {
			t.Fatal(err)
		}
		if i%30 == 29 {
			cli.Flush()
			srv.Flush()
			time.Sleep(2 * time.Millisecond) // within the reliable window
		}
		if i%(total/(rebinds+1)) == total/(rebinds+1)-1 && i < total-1 {
			before := srv.Clients()[0].Addr
			if err := cli.Rebind(nil); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the server to move the session", func() bool {
				c := srv.Clients()
				return len(c) == 1 && c[0].Addr != before
			})
		}
	}
	cli.Flush()
	srv.Flush()
	eventually(t, "both streams complete", func() bool {
		a, _ := toServer.count()
		b, _ := toClient.count()
		return a == total && b == total
	})
	for name, r := range map[string]*streamRecorder{"to server": toServer, "to client": toClient} {
		if n, errs := r.count(); n != total || len(errs) > 0 {
			t.Fatalf("%s: %d messages, errors %v", name, n, errs)
		}
	}
	if _, gone := ev.counts(); gone != 0 {
		t.Fatal("the client was disconnected")
	}
	st := srv.Stats()
	if st.Migrations != rebinds || st.PathValidationsFailed != 0 || st.ConnectionIDsIssued != 1 {
		t.Fatalf("migrations %d, failed validations %d, ids %d; want %d, 0, 1", st.Migrations, st.PathValidationsFailed, st.ConnectionIDsIssued, rebinds)
	}
	movesMu.Lock()
	defer movesMu.Unlock()
	for _, m := range moves {
		if m.Client != cli.ID() || m.From == m.To || m.Took <= 0 {
			t.Fatalf("migration %+v", m)
		}
	}
	if got := srv.Clients()[0].Addr; got.Port() != cli.LocalAddr().Port() {
		t.Fatalf("server sees the client at %v, its socket is %v", got, cli.LocalAddr())
	}
}

// idPeer is a raw v4 peer that asked for and got its connection id, and
// seals class-0x03 frames itself.
type idPeer struct {
	*rawPeer
	connID [8]byte
}

func newIDPeer(t *testing.T, srv *netstack.Server) *idPeer {
	t.Helper()
	p := newRawPeer4(t, srv.Addr(), nil)
	p.admit(srv.Pin(), "raw")
	token := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	p.sendUnreliable(wire.TypePathChallenge, wire.AppendPathChallenge(nil, &wire.PathChallenge{Token: token}))
	_, payload := p.await(wire.TypePathResponse)
	r, err := wire.ParsePathResponse(payload)
	if err != nil || r.Token != token || r.ID == ([8]byte{}) {
		t.Fatalf("PathResponse %+v %v", r, err)
	}
	return &idPeer{rawPeer: p, connID: r.ID}
}

// idFrame seals packet as a class-0x03 frame under the next sequence.
func (p *idPeer) idFrame(packet []byte) []byte {
	aead, _ := chacha20poly1305.New(p.res.C2S[:])
	hdr := []byte{0x03, 0x01, 0}
	hdr = binary.LittleEndian.AppendUint64(hdr, p.s)
	hdr = append(hdr, p.connID[:]...)
	var nonce [12]byte
	binary.LittleEndian.PutUint64(nonce[4:], p.s)
	p.s++
	return aead.Seal(hdr, nonce[:], packet, bytes.Clone(hdr))
}

// heartbeatFrom sends an authenticated heartbeat frame from conn.
func (p *idPeer) heartbeatFrom(conn *net.UDPConn) []byte {
	p.t.Helper()
	p.unrel++
	f := p.idFrame(p.packet(wire.Header{Type: wire.TypeHeartbeat, Channel: wire.Unreliable, Sequence: p.unrel},
		wire.AppendHeartbeat(nil, &wire.Heartbeat{})))
	sendTo(p.t, conn, p.server, f)
	return f
}

// challengeOn reads conn for wait (until the first PathChallenge when
// first is set) and returns the challenge's token and the bytes of every
// datagram that arrived there.
func (p *idPeer) challengeOn(conn *net.UDPConn, wait time.Duration, first bool) (token [8]byte, got int, ok bool) {
	p.t.Helper()
	end := time.Now().Add(wait)
	for time.Now().Before(end) {
		d, _, rok := recvDatagram(p.t, conn, time.Until(end))
		if !rok {
			break
		}
		got += len(d)
		pkt, err := openFrame(p.res.S2C, d)
		if err != nil {
			p.t.Fatalf("datagram to the new address does not open: %v", err)
		}
		r := wire.NewDatagramReader(pkt)
		var h wire.Header
		for payload, more := r.Next(&h); more; payload, more = r.Next(&h) {
			if h.Type != wire.TypePathChallenge {
				p.t.Fatalf("an unvalidated address was sent %v", h.Type)
			}
			c, _ := wire.ParsePathChallenge(payload)
			token, ok = c.Token, true
		}
		if ok && first {
			break
		}
	}
	return token, got, ok
}

func TestMigrationRawPeerMovesAfterAnswering(t *testing.T) {
	chat := make(chan string, 8)
	srv := quietServer(t, nil)
	srv.Handle(gamemsg.TypeChatMessage, func(_ uint32, _ *wire.Header, p []byte) { chat <- string(p) })
	p := newIDPeer(t, srv)
	old := srv.Clients()[0].Addr
	moved := udpSocket(t, loopback)

	p.heartbeatFrom(moved)
	token, _, ok := p.challengeOn(moved, waitLong, true)
	if !ok {
		t.Fatal("no PathChallenge at the new address")
	}
	if got := srv.Clients()[0].Addr; got != old {
		t.Fatalf("moved to %v before the challenge was answered", got)
	}
	// A late frame from the old address before the answer: accepted.
	p.unrel++
	sendTo(t, p.conn, p.server, p.idFrame(p.packet(wire.Header{Type: wire.TypeHeartbeat, Channel: wire.Unreliable, Sequence: p.unrel},
		wire.AppendHeartbeat(nil, &wire.Heartbeat{}))))
	p.unrel++
	sendTo(t, moved, p.server, p.idFrame(p.packet(wire.Header{Type: wire.TypePathResponse, Channel: wire.Unreliable, Sequence: p.unrel},
		wire.AppendPathResponse(nil, &wire.PathResponse{Token: token, ID: p.connID}))))
	eventually(t, "the move", func() bool { return srv.Clients()[0].Addr == localAddr(moved) })

	// Reordered on the old path: a chat line sent from the old address
	// after the move is still the session's.
	p.rel++
	sendTo(t, p.conn, p.server, p.idFrame(p.packet(wire.Header{Type: gamemsg.TypeChatMessage, Channel: wire.Reliable, Sequence: p.rel},
		gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "late hello"}))))
	select {
	case got := <-chat:
		if !bytes.Contains([]byte(got), []byte("late hello")) {
			t.Fatalf("chat %q", got)
		}
	case <-time.After(waitLong):
		t.Fatal("a frame from the old address within its grace was not delivered")
	}
	st := srv.Stats()
	if st.Migrations != 1 || st.PathValidationsStarted != 1 {
		t.Fatalf("migrations %d, validations %d; want 1, 1", st.Migrations, st.PathValidationsStarted)
	}
}

func TestMigrationForgedFramesMoveNothing(t *testing.T) {
	srv := quietServer(t, nil)
	p := newIDPeer(t, srv)
	home := srv.Clients()[0].Addr
	attacker := udpSocket(t, loopback)

	genuine := p.heartbeatFrom(p.conn) // from home: accepted, then replayed
	forged := p.idFrame(p.packet(wire.Header{Type: wire.TypeHeartbeat, Channel: wire.Unreliable, Sequence: 99},
		wire.AppendHeartbeat(nil, &wire.Heartbeat{})))
	forged[len(forged)-1] ^= 0x01 // a broken tag
	unknown := bytes.Clone(genuine)
	unknown[12] ^= 0xFF // another connection id
	before := srv.Stats().SecurityDrops
	for _, f := range [][]byte{genuine, forged, unknown} {
		sendTo(t, attacker, p.server, f)
	}
	// A probe from home that the server answers proves it read the three.
	p.sendUnreliable(wire.TypeHeartbeat, wire.AppendHeartbeat(nil, &wire.Heartbeat{Token: 77}))
	eventually(t, "the three drops", func() bool { return srv.Stats().SecurityDrops >= before+3 })
	if _, n, ok := p.challengeOn(attacker, quietWait, false); ok || n > 0 {
		t.Fatalf("the attacker's address was sent %d bytes", n)
	}
	st := srv.Stats()
	if st.PathValidationsStarted != 0 || st.Migrations != 0 || srv.Clients()[0].Addr != home {
		t.Fatalf("validations %d, migrations %d, address %v (home %v)", st.PathValidationsStarted, st.Migrations, srv.Clients()[0].Addr, home)
	}
}

func TestMigrationUnansweredPathIsAbandoned(t *testing.T) {
	srv := quietServer(t, nil)
	p := newIDPeer(t, srv)
	home := srv.Clients()[0].Addr
	silent := udpSocket(t, loopback)

	sent := len(p.heartbeatFrom(silent))
	_, got, ok := p.challengeOn(silent, 400*time.Millisecond, false)
	if !ok {
		t.Fatal("no PathChallenge at the new address")
	}
	// Two more small frames over 1.5 s: whatever the server resends there
	// stays within 3× what came from there.
	for range 2 {
		sent += len(p.heartbeatFrom(silent))
		_, n, _ := p.challengeOn(silent, 700*time.Millisecond, false)
		got += n
		if got > 3*sent {
			t.Fatalf("sent %d bytes to the unvalidated address, received %d from it", got, sent)
		}
	}
	eventually(t, "the validation abandoned", func() bool { return srv.Stats().PathValidationsFailed == 1 })
	_, n, _ := p.challengeOn(silent, quietWait, false)
	if got += n; got > 3*sent {
		t.Fatalf("sent %d bytes to the unvalidated address, received %d from it", got, sent)
	}
	if srv.Clients()[0].Addr != home || srv.Stats().Migrations != 0 {
		t.Fatal("the session left its address")
	}
	// Still alive at home.
	p.sendUnreliable(wire.TypeHeartbeat, wire.AppendHeartbeat(nil, &wire.Heartbeat{Token: 5}))
	for {
		h, payload := p.await(wire.TypeHeartbeat)
		if hb, _ := wire.ParseHeartbeat(payload); h.Type == wire.TypeHeartbeat && hb.Echo == 5 {
			break
		}
	}
}

// Without the extension nothing changes: a v4 client with NoMigration and
// a v3 client never get an id, send class-0x02 frames only, and a v3
// session's PathChallenge is a message of an unknown type.
func TestMigrationOnlyWhenAsked(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.Registry = soakRegistry(t) })
	for name, mod := range map[string]func(*netstack.ClientConfig){
		"v4 without migration": func(c *netstack.ClientConfig) { c.NoMigration = true },
		"v3":                   func(c *netstack.ClientConfig) { c.Protocol = 3 },
	} {
		cli := dialMigrating(t, srv, mod)
		if err := cli.Send(soakOrdered, wire.ReliableOrdered, streamPayload(0)); err != nil {
			t.Fatal(err)
		}
		cli.Flush()
		eventually(t, name+": its message acknowledged", func() bool { return cli.Unconfirmed() == 0 })
		time.Sleep(quietWait)
		if cli.MigrationReady() {
			t.Fatalf("%s: got a connection id", name)
		}
		cli.Close()
	}
	v3 := newRawPeer(t, srv.Addr())
	v3.admit(srv.Pin(), "old")
	v3.sendUnreliable(wire.TypePathChallenge, make([]byte, 8))
	eventually(t, "the v3 PathChallenge refused", func() bool { return srv.Stats().RefusedBy[wire.RefusedUnknownType] == 1 })
	if st := srv.Stats(); st.ConnectionIDsIssued != 0 {
		t.Fatalf("ids issued: %d", st.ConnectionIDsIssued)
	}
}

// TestMigrationNotToABannedAddress: a session does not move to an address
// the server bans (no hello from there would be served); it moves to the
// next address that is not banned.
func TestMigrationNotToABannedAddress(t *testing.T) {
	banned := netip.MustParseAddr("127.0.0.3")
	srv := quietServer(t, func(c *netstack.ServerConfig) {
		c.Registry = soakRegistry(t)
		c.IsBanned = func(a netip.Addr) bool { return a == banned }
	})
	cli := dialMigrating(t, srv, nil)
	eventually(t, "the connection id", cli.MigrationReady)
	home := srv.Clients()[0].Addr

	conn, err := net.ListenPacket("udp4", netip.AddrPortFrom(banned, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Rebind(conn); err != nil {
		t.Fatal(err)
	}
	before := srv.Stats().PacketsReceived
	for i := range uint32(20) {
		if err := cli.Send(soakOrdered, wire.ReliableOrdered, streamPayload(i)); err != nil {
			t.Fatal(err)
		}
		cli.Flush()
	}
	eventually(t, "frames from the banned address", func() bool { return srv.Stats().PacketsReceived >= before+10 })
	if st := srv.Stats(); st.PathValidationsStarted != 0 || st.Migrations != 0 || srv.Clients()[0].Addr != home {
		t.Fatalf("validations %d, migrations %d, address %v (home %v): moved toward a banned address", st.PathValidationsStarted, st.Migrations, srv.Clients()[0].Addr, home)
	}

	if err := cli.Rebind(nil); err != nil { // a new socket on 127.0.0.1: not banned
		t.Fatal(err)
	}
	for i := range uint32(5) {
		if err := cli.Send(soakOrdered, wire.ReliableOrdered, streamPayload(20+i)); err != nil {
			t.Fatal(err)
		}
		cli.Flush()
	}
	eventually(t, "the move to the address that is not banned", func() bool { return srv.Stats().Migrations == 1 })
}
