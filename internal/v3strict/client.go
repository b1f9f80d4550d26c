package v3strict

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// heartbeatInterval is §8's: one per second each way.
const heartbeatInterval = time.Second

// Message is one message the server sent, as delivered: reliable ones once
// each, ReliableOrdered ones in OrderedSequence order.
type Message struct {
	Type     uint16
	Channel  Channel
	Sequence uint32
	Ordered  uint32
	Payload  []byte
}

// Stats is what the client observed.
type Stats struct {
	ServerHeartbeats int           // heartbeats with a token the server sent
	Echoes           int           // answers to ours
	SlowestEcho      time.Duration // longest wait for an answer to ours
	Duplicates       int           // reliable packets received again (acked, not delivered)
	Replays          int           // frames refused by the replay window
	Ordered          uint32        // OrderedSequences delivered: 1..Ordered, with no gap
	Delivered        map[uint16]int
}

// Client is one strict v3 session. Its methods are safe for concurrent use.
type Client struct {
	cfg      Config
	table    *Table
	conn     *net.UDPConn
	origin   time.Time
	accepted []byte // the ConnectAccepted datagram: repeats must be identical
	id       uint32

	mu         sync.Mutex
	seal       *sealer
	open       *opener
	in         *inbound
	out        *outbound
	lastAuth   time.Time
	nextHB     time.Time
	tokens     map[uint32]time.Time
	types      map[uint16]EntityType // of the last GameStateSync
	sawSync    bool
	entities   map[uint32]entity
	inbox      []Message
	violations []error
	gapTold    uint32
	stats      Stats
	disc       *DisconnectedError
	closing    bool

	notify    chan struct{}
	admitted  chan struct{}
	admitOnce sync.Once
	done      chan struct{}
	doneOnce  sync.Once
	loopDone  chan struct{}
}

func newClient(cfg Config, table *Table, conn *net.UDPConn) *Client {
	return &Client{
		cfg: cfg, table: table, conn: conn, origin: time.Now(),
		in: newInbound(), out: newOutbound(),
		tokens: make(map[uint32]time.Time), entities: make(map[uint32]entity),
		stats:  Stats{Delivered: make(map[uint16]int)},
		notify: make(chan struct{}, 1), admitted: make(chan struct{}), done: make(chan struct{}), loopDone: make(chan struct{}),
	}
}

// ID is the client id the server assigned.
func (c *Client) ID() uint32 { return c.id }

func (c *Client) timestamp(now time.Time) float32 { return float32(now.Sub(c.origin).Seconds()) }

// violate records something the contract does not allow.
func (c *Client) violate(format string, args ...any) {
	c.violations = append(c.violations, fmt.Errorf(format, args...))
}

// Err returns every violation seen so far (nil: none).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.violations...)
}

// Check is Err, and also fails while ordered messages wait behind a gap or
// a reliable message of ours is unacknowledged.
func (c *Client) Check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	errs := append([]error(nil), c.violations...)
	if len(c.in.held) > 0 {
		errs = append(errs, fmt.Errorf("%d ordered messages held: OrderedSequence %d never arrived", len(c.in.held), c.in.nextOrdered))
	}
	if n := c.out.unacked(); n > 0 {
		errs = append(errs, fmt.Errorf("%d reliable messages of ours unacknowledged", n))
	}
	return errors.Join(errs...)
}

// Stats returns a copy of what the client observed.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Delivered = make(map[uint16]int, len(c.stats.Delivered))
	for k, v := range c.stats.Delivered {
		st.Delivered[k] = v
	}
	return st
}

// Disconnected returns the Disconnect the server closed with (nil: none).
func (c *Client) Disconnected() *DisconnectedError {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.disc
}

// Done is closed when the connection ends.
func (c *Client) Done() <-chan struct{} { return c.done }

// Send sends a message the table allows a client to send, on its channel.
func (c *Client) Send(typ uint16, payload []byte) error {
	r, ok := c.table.Lookup(typ)
	if !ok {
		return fmt.Errorf("type %d is not in the table", typ)
	}
	if err := c.table.Check(ToServer, Header{Type: typ, Channel: r.Channel}, payload); err != nil {
		return fmt.Errorf("refusing to send: %w", err)
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || c.disc != nil {
		return errors.New("connection closed")
	}
	if r.Channel == Unreliable {
		c.sendUnreliableLocked(typ, payload, now)
		return nil
	}
	c.sendReliableLocked(Header{Type: typ, Channel: r.Channel}, payload, false, now)
	return nil
}

// SendChat sends a ChatMessage (empty sender, as a client must).
func (c *Client) SendChat(text string) error {
	return c.Send(TypeChatMessage, append(appendStr(nil, nil), appendStr(nil, []byte(text))...))
}

// SendProbe sends, once, a reliable packet the contract calls malformed
// (a type outside the table, or a payload breaking its rule) and returns
// its sequence. The server must drop it unacknowledged: an Ack covering it
// is a violation.
func (c *Client) SendProbe(typ uint16, ch Channel, payload []byte) uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendReliableLocked(Header{Type: typ, Channel: ch}, payload, true, time.Now())
}

// WaitAcked waits until every reliable message of ours is acknowledged.
func (c *Client) WaitAcked(ctx context.Context) error {
	for {
		c.mu.Lock()
		n := c.out.unacked()
		c.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d reliable messages unacknowledged: %w", n, ctx.Err())
		case <-c.done:
			return errors.New("connection closed with reliable messages unacknowledged")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Next returns the next delivered message, or the *DisconnectedError once
// the server closed and everything before it was read.
func (c *Client) Next(ctx context.Context) (Message, error) {
	for {
		c.mu.Lock()
		if len(c.inbox) > 0 {
			m := c.inbox[0]
			c.inbox = c.inbox[1:]
			c.mu.Unlock()
			return m, nil
		}
		disc := c.disc
		c.mu.Unlock()
		if disc != nil {
			return Message{}, disc
		}
		select {
		case <-ctx.Done():
			return Message{}, ctx.Err()
		case <-c.done:
			c.mu.Lock()
			empty := len(c.inbox) == 0 && c.disc == nil
			c.mu.Unlock()
			if empty {
				return Message{}, errors.New("connection ended")
			}
		case <-c.notify:
		}
	}
}

// WaitFor returns the first message of type typ, skipping others.
func (c *Client) WaitFor(ctx context.Context, typ uint16) (Message, error) {
	for {
		m, err := c.Next(ctx)
		if err != nil || m.Type == typ {
			return m, err
		}
	}
}

// Close sends Disconnect(ClientQuit) — one packet sealed three times (§8)
// — and ends the session.
func (c *Client) Close() {
	c.mu.Lock()
	if !c.closing && c.disc == nil && c.seal != nil {
		c.closing = true
		var p []byte
		p = append(p, DisconnectClientQuit)
		p = appendStr(p, []byte("bye"))
		h := Header{Type: TypeDisconnect, SenderID: c.id, Sequence: c.out.nextUnrel, Timestamp: c.timestamp(time.Now())}
		c.out.nextUnrel++
		pkt := AppendPacket(nil, h, p)
		for range 3 {
			c.write(c.seal.seal(pkt))
		}
	}
	c.closing = true
	c.mu.Unlock()
	c.end()
	select {
	case <-c.loopDone:
	case <-time.After(5 * time.Second):
	}
	c.conn.Close()
}

func (c *Client) end() { c.doneOnce.Do(func() { close(c.done) }) }

func (c *Client) write(d []byte) { _, _ = c.conn.WriteToUDPAddrPort(d, c.cfg.Server) }

// sendReliableLocked numbers, keeps and sends a reliable packet.
func (c *Client) sendReliableLocked(h Header, payload []byte, probe bool, now time.Time) uint32 {
	h.SenderID, h.Timestamp = c.id, c.timestamp(now)
	p := c.out.add(h, append([]byte(nil), payload...), probe, now)
	c.write(c.seal.seal(AppendPacket(nil, p.h, p.payload)))
	return p.h.Sequence
}

func (c *Client) sendUnreliableLocked(typ uint16, payload []byte, now time.Time) {
	h := Header{Type: typ, SenderID: c.id, Sequence: c.out.nextUnrel, Timestamp: c.timestamp(now)}
	c.out.nextUnrel++
	c.write(c.seal.seal(AppendPacket(nil, h, payload)))
}

// loop receives and runs the timers until the session ends.
func (c *Client) loop() {
	defer close(c.loopDone)
	buf := make([]byte, 65536)
	for {
		select {
		case <-c.done:
			return
		default:
		}
		c.conn.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		n, from, err := c.conn.ReadFromUDPAddrPort(buf)
		now := time.Now()
		c.mu.Lock()
		if err == nil && from == c.cfg.Server {
			c.receiveLocked(buf[:n], now)
		}
		if c.disc == nil && !c.closing {
			c.timersLocked(now)
		}
		ended := c.disc != nil
		c.mu.Unlock()
		var ne net.Error
		if ended || (err != nil && !(errors.As(err, &ne) && ne.Timeout())) {
			c.end()
			c.wake()
			return
		}
	}
}

func (c *Client) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// timersLocked runs liveness, heartbeats, retransmissions and the gap watch.
func (c *Client) timersLocked(now time.Time) {
	if now.Sub(c.lastAuth) >= c.cfg.Timeout {
		c.violate("nothing authenticated from the server for %v", c.cfg.Timeout)
		c.disc = &DisconnectedError{Reason: DisconnectTimeout, Detail: "the server fell silent"}
		return
	}
	if c.isAdmitted() && !now.Before(c.nextHB) {
		c.nextHB = now.Add(heartbeatInterval)
		token := randomToken()
		c.tokens[token] = now
		c.sendUnreliableLocked(TypeHeartbeat, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, token), 0), now)
	}
	again, err := c.out.due(now)
	if err != nil {
		c.violate("%v", err)
		c.disc = &DisconnectedError{Reason: DisconnectReliableDeliveryFailed, Detail: err.Error()}
		return
	}
	for _, p := range again {
		c.write(c.seal.seal(AppendPacket(nil, p.h, p.payload)))
	}
	if seq, since := c.in.oldestGap(); !since.IsZero() && now.Sub(since) > c.cfg.GapTimeout && c.gapTold != seq {
		c.gapTold = seq
		c.violate("OrderedSequence %d missing for %v while later ordered messages wait", seq, c.cfg.GapTimeout)
	}
}

func (c *Client) isAdmitted() bool {
	select {
	case <-c.admitted:
		return true
	default:
		return false
	}
}

func randomToken() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint32(b[:]) | 1
}
