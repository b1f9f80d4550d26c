package netstack_test

// Helpers of the *_udp_test.go integration tests: real UDP sockets on the
// loopback interface, raw datagrams crafted with the wire, handshake and seal
// building blocks, and a raw client (rawPeer) that performs the handshake
// itself so a test controls every byte it sends.
//
// Timing rules: every wait is bounded by waitLong (generous, for a busy 2-core
// machine under -race); "nothing arrives" is judged after a later datagram
// whose answer proves the server already processed the earlier one, or with
// quietWait when no such probe exists.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

const (
	// waitLong bounds every wait for something that must happen.
	waitLong = 10 * time.Second
	// quietWait is how long a socket must stay silent to count as "nothing
	// arrived" when no later answer can prove it.
	quietWait = 300 * time.Millisecond
)

var loopback = netip.MustParseAddr("127.0.0.1")

// plentyBudget lifts the per-IP Connect budget for tests that send many
// Connects from 127.0.0.1 but do not test the budget itself.
var plentyBudget = ratelimit.Config{Burst: 100000, RefillPerSecond: 100000}

// quietServer is newTestServer with a logger that discards.
func quietServer(t *testing.T, mod func(*netstack.ServerConfig)) *netstack.Server {
	t.Helper()
	return newTestServer(t, func(c *netstack.ServerConfig) {
		c.Logger = slog.New(slog.DiscardHandler)
		if mod != nil {
			mod(c)
		}
	})
}

// udpSocket opens a UDP socket on addr with an ephemeral port.
func udpSocket(t *testing.T, addr netip.Addr) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func localAddr(c *net.UDPConn) netip.AddrPort {
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

func sendTo(t *testing.T, c *net.UDPConn, to netip.AddrPort, b []byte) {
	t.Helper()
	if _, err := c.WriteToUDPAddrPort(b, to); err != nil {
		t.Fatalf("send to %s: %v", to, err)
	}
}

// recvDatagram returns the next datagram within d; ok is false on timeout.
func recvDatagram(t *testing.T, c *net.UDPConn, d time.Duration) (b []byte, from netip.AddrPort, ok bool) {
	t.Helper()
	buf := make([]byte, 65536)
	if err := c.SetReadDeadline(time.Now().Add(d)); err != nil {
		t.Fatal(err)
	}
	n, from, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, from, false
		}
		t.Fatalf("read: %v", err)
	}
	return buf[:n], from, true
}

// drain returns every datagram that arrives until the socket has been quiet
// for quiet (bounded by waitLong overall).
func drain(t *testing.T, c *net.UDPConn, quiet time.Duration) [][]byte {
	t.Helper()
	var out [][]byte
	end := time.Now().Add(waitLong)
	for time.Now().Before(end) {
		d, _, ok := recvDatagram(t, c, quiet)
		if !ok {
			return out
		}
		out = append(out, d)
	}
	t.Fatalf("socket never went quiet for %v", quiet)
	return nil
}

// plainFrame is a 0x01 frame carrying a packet of type typ (Sequence 0).
func plainFrame(typ wire.MessageType, ch wire.Channel, payload []byte) []byte {
	h := wire.Header{Type: typ, Channel: ch}
	return wire.AppendPacket([]byte{0x01}, &h, payload)
}

func connectFrame(hello []byte) []byte {
	return plainFrame(wire.TypeConnect, wire.Unreliable, hello)
}

// helloBytes builds a 55-byte ClientHello with the given fields.
func helloBytes(version uint16, suite uint8, key [32]byte) []byte {
	h := handshake.ClientHello{Version: version, Suite: suite, EphemeralPub: key}
	for i := range h.Nonce {
		h.Nonce[i] = byte(i + 1)
	}
	return h.Append(nil)
}

// freshHello returns a valid ClientHello with a new ephemeral key.
func freshHello(t *testing.T) []byte {
	t.Helper()
	hs, err := handshake.NewClientHandshake(nil)
	if err != nil {
		t.Fatal(err)
	}
	return hs.Hello()
}

// parsePlain decodes a plain (0x01) datagram.
func parsePlain(t *testing.T, d []byte) (wire.Header, []byte) {
	t.Helper()
	if len(d) == 0 || d[0] != 0x01 {
		t.Fatalf("want a plain 0x01 frame, got % x", head(d))
	}
	h, p, err := wire.ParsePacket(d[1:])
	if err != nil {
		t.Fatalf("plain frame does not parse: %v", err)
	}
	return h, p
}

func head(d []byte) []byte {
	if len(d) > 16 {
		return d[:16]
	}
	return d
}

// checkRejected checks that d is a ConnectRejected packet (after any frame
// byte was removed) with reason want and server_version 3.
func checkRejected(t *testing.T, h wire.Header, payload []byte, want wire.RejectReason) {
	t.Helper()
	checkRejectedV(t, h, payload, want, 3)
}

// checkRejectedV is checkRejected for server_version version.
func checkRejectedV(t *testing.T, h wire.Header, payload []byte, want wire.RejectReason, version uint16) {
	t.Helper()
	if h.Type != wire.TypeConnectRejected || h.Channel != wire.Unreliable || h.SenderID != 0 || h.Sequence != 0 {
		t.Fatalf("want ConnectRejected on channel 0 with SenderID 0, Sequence 0; got %+v", h)
	}
	rej, err := wire.ParseConnectRejected(payload)
	if err != nil {
		t.Fatalf("ConnectRejected payload: %v", err)
	}
	if wire.RejectReason(rej.Reason) != want || rej.ServerVersion != version {
		t.Fatalf("ConnectRejected reason %v server_version %d, want %v and %d (detail %q)",
			wire.RejectReason(rej.Reason), rej.ServerVersion, want, version, rej.Detail)
	}
}

// expectRejected reads the next datagram and checks it is a plain-frame
// ConnectRejected with reason want and server_version 3.
func expectRejected(t *testing.T, c *net.UDPConn, want wire.RejectReason) {
	t.Helper()
	expectRejectedV(t, c, want, 3)
}

// expectRejectedV is expectRejected for server_version version; it returns
// the datagram.
func expectRejectedV(t *testing.T, c *net.UDPConn, want wire.RejectReason, version uint16) []byte {
	t.Helper()
	d, _, ok := recvDatagram(t, c, waitLong)
	if !ok {
		t.Fatalf("no answer, want ConnectRejected %v", want)
	}
	h, p := parsePlain(t, d)
	checkRejectedV(t, h, p, want, version)
	return d
}

// eventually polls cond every 5 ms until it holds or waitLong passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sealWith seals packet as a §6 frame of epoch e and frame sequence s.
func sealWith(key [32]byte, e uint8, s uint64, packet []byte) []byte {
	aead, err := chacha20poly1305.New(key[:])
	if err != nil {
		panic(err)
	}
	hdr := []byte{0x02, 0x01, e}
	hdr = binary.LittleEndian.AppendUint64(hdr, s)
	var nonce [12]byte
	nonce[0] = e
	binary.LittleEndian.PutUint64(nonce[4:], s)
	ad := append([]byte(nil), hdr...)
	return aead.Seal(hdr, nonce[:], packet, ad)
}

// openFrame opens a §6 frame sealed with key (any epoch; the caller passes
// the epoch's key).
func openFrame(key [32]byte, d []byte) ([]byte, error) {
	if len(d) < 11+16 || d[0] != 0x02 || d[1] != 0x01 {
		return nil, errors.New("not a sealed frame")
	}
	aead, err := chacha20poly1305.New(key[:])
	if err != nil {
		return nil, err
	}
	var nonce [12]byte
	nonce[0] = d[2]
	copy(nonce[4:], d[3:11])
	return aead.Open(nil, nonce[:], d[11:], d[:11])
}

// rawPeer is a client built from the handshake and wire packages over its own
// UDP socket: it sends exactly what a test tells it to.
type rawPeer struct {
	t      *testing.T
	conn   *net.UDPConn
	server netip.AddrPort
	hs     *handshake.ClientHandshake
	hello  []byte
	res    *handshake.ClientResult
	accept []byte // the ConnectAccepted datagram

	s               uint64 // next frame sequence
	rel, unrel, ord uint32 // last sequences used
	sent            [][]byte
	lastSend        time.Time
	inbox           []rawMessage // records of a v4 datagram not returned yet
}

// rawMessage is one message received by a rawPeer.
type rawMessage struct {
	h       wire.Header
	payload []byte
}

func newRawPeer(t *testing.T, server netip.AddrPort) *rawPeer {
	t.Helper()
	hs, err := handshake.NewClientHandshake(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &rawPeer{t: t, conn: udpSocket(t, loopback), server: server, hs: hs, hello: hs.Hello()}
}

// newRawPeer4 is newRawPeer speaking v4: connect first fetches a cookie,
// and hello is then the hello that echoes it.
func newRawPeer4(t *testing.T, server netip.AddrPort, conn *net.UDPConn) *rawPeer {
	t.Helper()
	hs, err := handshake.NewClientHandshake4(nil)
	if err != nil {
		t.Fatal(err)
	}
	if conn == nil {
		conn = udpSocket(t, loopback)
	}
	return &rawPeer{t: t, conn: conn, server: server, hs: hs, hello: hs.Hello4(nil)}
}

// fetchCookie sends the first v4 hello and returns the CookieReply's cookie.
func (p *rawPeer) fetchCookie() []byte {
	p.t.Helper()
	p.write(connectFrame(p.hs.Hello4(nil)))
	h, payload := parsePlain(p.t, p.nextPlain())
	if h.Type != wire.TypeCookieReply {
		p.t.Fatalf("want CookieReply, got %v", h.Type)
	}
	cr, err := handshake.ParseCookieReply(payload)
	if err != nil || cr.Nonce != p.hs.Nonce() {
		p.t.Fatalf("CookieReply %+v: %v", cr, err)
	}
	return bytes.Clone(cr.Cookie)
}

func (p *rawPeer) id() uint32 { return p.res.ClientID }

func (p *rawPeer) write(b []byte) {
	p.t.Helper()
	sendTo(p.t, p.conn, p.server, b)
	p.lastSend = time.Now()
}

// connect sends the Connect (for v4 after fetching a cookie) and verifies the
// ConnectAccepted against pin.
func (p *rawPeer) connect(pin string) uint32 {
	p.t.Helper()
	if p.hs.Version() == handshake.ProtocolVersion4 {
		p.hello = p.hs.Hello4(p.fetchCookie())
	}
	p.write(connectFrame(p.hello))
	d := p.nextPlain()
	h, payload := parsePlain(p.t, d)
	if h.Type != wire.TypeConnectAccepted {
		p.t.Fatalf("want ConnectAccepted, got %v", h.Type)
	}
	key, err := trust.ParsePin(pin)
	if err != nil {
		p.t.Fatal(err)
	}
	res, err := p.hs.Finish(payload, func(pub [32]byte) error {
		if pub != key {
			return errors.New("identity differs from the pin")
		}
		return nil
	})
	if err != nil {
		p.t.Fatalf("ConnectAccepted: %v", err)
	}
	p.res, p.accept = res, d
	return res.ClientID
}

// nextPlain returns the next plain-class datagram, skipping sealed ones.
func (p *rawPeer) nextPlain() []byte {
	p.t.Helper()
	end := time.Now().Add(waitLong)
	for time.Now().Before(end) {
		d, _, ok := recvDatagram(p.t, p.conn, time.Until(end))
		if ok && len(d) > 0 && d[0] == 0x01 {
			return d
		}
	}
	p.t.Fatal("no plain frame from the server")
	return nil
}

// v4 reports whether the peer's session is protocol v4 (packed datagrams).
func (p *rawPeer) v4() bool { return p.hs.Version() == handshake.ProtocolVersion4 }

// packet encodes h (SenderID = the assigned id unless set) and payload: a
// §2 packet in a v3 session, a datagram body of one record in a v4 one.
func (p *rawPeer) packet(h wire.Header, payload []byte) []byte {
	if p.v4() {
		base := uint32(1)
		if h.Channel == wire.Unreliable {
			base = h.Sequence
		}
		return wire.AppendRecord(wire.AppendDatagramBase(nil, base), &h, payload)
	}
	if h.SenderID == 0 {
		h.SenderID = p.id()
	}
	return wire.AppendPacket(nil, &h, payload)
}

// frame seals packet with the session key under the next frame sequence.
func (p *rawPeer) frame(packet []byte) []byte {
	f := sealWith(p.res.C2S, 0, p.s, packet)
	p.s++
	return f
}

// sendSealed seals and sends one packet, keeping the frame for replays.
func (p *rawPeer) sendSealed(h wire.Header, payload []byte) []byte {
	p.t.Helper()
	f := p.frame(p.packet(h, payload))
	p.sent = append(p.sent, f)
	p.write(f)
	return f
}

func (p *rawPeer) sendReliable(typ wire.MessageType, payload []byte) {
	p.rel++
	p.sendSealed(wire.Header{Type: typ, Channel: wire.Reliable, Sequence: p.rel}, payload)
}

func (p *rawPeer) sendUnreliable(typ wire.MessageType, payload []byte) {
	p.unrel++
	p.sendSealed(wire.Header{Type: typ, Channel: wire.Unreliable, Sequence: p.unrel}, payload)
}

func (p *rawPeer) sendChat(text string) {
	p.sendReliable(gamemsg.TypeChatMessage, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: text}))
}

// sendFinished sends ClientFinished with the given name and Sequence seq.
func (p *rawPeer) sendFinished(name string, seq uint32) {
	p.rel = max(p.rel, seq)
	p.sendSealed(wire.Header{Type: wire.TypeConnect, Channel: wire.Reliable, Sequence: seq},
		wire.AppendClientFinished(nil, &wire.ClientFinished{Name: name}))
}

// recvSealed returns the next sealed packet from the server within d,
// acknowledging reliable ones at once. Plain datagrams fail the test.
func (p *rawPeer) recvSealed(d time.Duration) (wire.Header, []byte, bool) {
	p.t.Helper()
	end := time.Now().Add(d)
	for {
		if len(p.inbox) > 0 {
			m := p.inbox[0]
			p.inbox = p.inbox[1:]
			return p.ackIfReliable(m.h, m.payload)
		}
		left := time.Until(end)
		if left <= 0 {
			return wire.Header{}, nil, false
		}
		dg, _, ok := recvDatagram(p.t, p.conn, left)
		if !ok {
			return wire.Header{}, nil, false
		}
		if len(dg) == 0 || dg[0] != 0x02 {
			p.t.Fatalf("unexpected non-sealed datagram % x", head(dg))
		}
		pkt, err := openFrame(p.res.S2C, dg)
		if err != nil {
			p.t.Fatalf("server frame does not open: %v", err)
		}
		if p.v4() {
			if _, err := wire.CheckDatagram(pkt); err != nil {
				p.t.Fatalf("server datagram: %v", err)
			}
			r := wire.NewDatagramReader(pkt)
			for {
				var h wire.Header
				payload, ok := r.Next(&h)
				if !ok {
					break
				}
				p.inbox = append(p.inbox, rawMessage{h, bytes.Clone(payload)})
			}
			continue
		}
		h, payload, err := wire.ParsePacket(pkt)
		if err != nil {
			p.t.Fatalf("server packet: %v", err)
		}
		if h.SenderID != 0 {
			p.t.Fatalf("server packet with SenderID %d", h.SenderID)
		}
		return p.ackIfReliable(h, payload)
	}
}

// ackIfReliable acknowledges a reliable message at once and returns it.
func (p *rawPeer) ackIfReliable(h wire.Header, payload []byte) (wire.Header, []byte, bool) {
	if h.Channel.IsReliable() {
		p.sendUnreliable(wire.TypeAck, wire.AppendAck(nil, &wire.Ack{Ack: h.Sequence}))
	}
	return h, payload, true
}

// await returns the next sealed packet of type typ, skipping (and acking) others.
func (p *rawPeer) await(typ wire.MessageType) (wire.Header, []byte) {
	p.t.Helper()
	end := time.Now().Add(waitLong)
	for {
		h, payload, ok := p.recvSealed(time.Until(end))
		if !ok {
			p.t.Fatalf("no %v from the server", typ)
		}
		if h.Type == typ {
			return h, payload
		}
	}
}

// admit connects and finishes the handshake with name; it returns once the
// GameStateSync arrived (and was acked).
func (p *rawPeer) admit(pin, name string) uint32 {
	p.t.Helper()
	id := p.connect(pin)
	p.sendFinished(name, 1)
	_, payload := p.await(gamemsg.TypeGameStateSync)
	gs, err := gamemsg.ParseGameStateSync(payload)
	if err != nil {
		p.t.Fatal(err)
	}
	if gs.ClientID != id {
		p.t.Fatalf("GameStateSync client_id %d, assigned %d", gs.ClientID, id)
	}
	return id
}

// events records the module-visible callbacks of a server.
type events struct {
	mu           sync.Mutex
	admitted     []netstack.ClientInfo
	disconnected []disconnectEvent
	changed      chan struct{}
}

type disconnectEvent struct {
	info   netstack.ClientInfo
	reason wire.DisconnectReason
	detail string
	at     time.Time
}

func newEvents() *events { return &events{changed: make(chan struct{}, 1)} }

// hook installs the callbacks in cfg.
func (e *events) hook(cfg *netstack.ServerConfig) {
	cfg.OnAdmitted = func(ci netstack.ClientInfo) {
		e.mu.Lock()
		e.admitted = append(e.admitted, ci)
		e.mu.Unlock()
		e.poke()
	}
	cfg.OnDisconnected = func(ci netstack.ClientInfo, r wire.DisconnectReason, d string) {
		e.mu.Lock()
		e.disconnected = append(e.disconnected, disconnectEvent{ci, r, d, time.Now()})
		e.mu.Unlock()
		e.poke()
	}
}

func (e *events) poke() {
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

func (e *events) counts() (admitted, disconnected int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.admitted), len(e.disconnected)
}

// waitDisconnect returns the disconnect event of client id.
func (e *events) waitDisconnect(t *testing.T, id uint32) disconnectEvent {
	t.Helper()
	end := time.NewTimer(waitLong)
	defer end.Stop()
	for {
		e.mu.Lock()
		for _, d := range e.disconnected {
			if d.info.ID == id {
				e.mu.Unlock()
				return d
			}
		}
		e.mu.Unlock()
		select {
		case <-e.changed:
		case <-end.C:
			t.Fatalf("no OnDisconnected for client %d", id)
		}
	}
}
