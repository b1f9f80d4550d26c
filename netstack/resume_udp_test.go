package netstack

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/internal/udprelay"
	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Resumption over real UDP on the loopback interface (docs/protocol.md
// §3.15): a relay (internal/udprelay) cuts the path both ways for longer than the
// liveness timeout; the client comes back from a new socket.

const (
	lineType     wire.MessageType = 1000
	resumeWait                    = 15 * time.Second // bounds every wait (busy 2-core machine, -race)
	resumeTO                      = time.Second      // liveness timeout of both ends in these tests
	resumeBeat                    = 200 * time.Millisecond
	resumeQuiet                   = 400 * time.Millisecond
	resumeHoldOK                  = 8 * time.Second
)

func lineRegistry(t testing.TB) *wire.Registry {
	reg := wire.NewRegistry()
	err := reg.Register("test", wire.Schema{ID: lineType, Name: "Line", Direction: wire.BothDirections,
		Channel: wire.ReliableOrdered, MinLen: 1, MaxLen: 64, StringFieldOffset: wire.NoStringFields})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// seatRig is a server behind a darkLink, with what its callbacks saw.
type seatRig struct {
	srv  *Server
	link *udprelay.Relay
	reg  *wire.Registry

	mu       sync.Mutex
	admitted []uint32
	held     []uint32
	resumed  []ClientInfo
	left     map[uint32]wire.DisconnectReason
	got      []string // lines the server received, in order
}

func newSeatRig(t *testing.T, hold time.Duration, mod ...func(*ServerConfig)) *seatRig {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r := &seatRig{reg: lineRegistry(t), left: map[uint32]wire.DisconnectReason{}}
	cfg := ServerConfig{Bind: "127.0.0.1", Identity: priv, Logger: slog.New(slog.DiscardHandler), Registry: r.reg,
		Timeout: resumeTO, HeartbeatInterval: resumeBeat, ResumeHold: hold}
	cfg.OnAdmitted = func(ci ClientInfo) { r.note(func() { r.admitted = append(r.admitted, ci.ID) }) }
	cfg.OnHeld = func(ci ClientInfo) { r.note(func() { r.held = append(r.held, ci.ID) }) }
	cfg.OnResumed = func(ci ClientInfo) { r.note(func() { r.resumed = append(r.resumed, ci) }) }
	cfg.OnDisconnected = func(ci ClientInfo, reason wire.DisconnectReason, _ string) {
		r.note(func() { r.left[ci.ID] = reason })
	}
	for _, m := range mod {
		m(&cfg)
	}
	if r.srv, err = NewServer(cfg); err != nil {
		t.Fatal(err)
	}
	r.srv.Handle(lineType, func(_ uint32, _ *wire.Header, p []byte) { r.note(func() { r.got = append(r.got, string(p)) }) })
	r.srv.Start()
	t.Cleanup(func() { r.srv.Close() })
	if r.link, err = udprelay.New(r.srv.Addr()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.link.Close)
	return r
}

func (r *seatRig) note(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

func (r *seatRig) clientConfig(name string) ClientConfig {
	return ClientConfig{Server: r.link.Addr(), Name: name, Pin: r.srv.Pin(), Registry: r.reg, Resumable: true,
		Timeout: resumeTO, HeartbeatInterval: resumeBeat, ConnectRetry: 100 * time.Millisecond}
}

// dial connects a resumable client and waits for its first ticket.
func (r *seatRig) dial(t *testing.T, name string) *Client {
	ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
	defer cancel()
	c, err := Dial(ctx, r.clientConfig(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	waitFor(t, "a resume ticket", c.HasResumeTicket)
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(resumeWait); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// goDark cuts the path and waits until the client timed out and the
// server holds its seat.
func (r *seatRig) goDark(t *testing.T, c *Client) {
	r.link.SetDark(true)
	select {
	case <-c.Done():
	case <-time.After(resumeWait):
		t.Fatal("the client did not time out")
	}
	if reason, _ := c.CloseReason(); reason != wire.DisconnectTimeout {
		t.Fatalf("client closed with %v, want Timeout", reason)
	}
	waitFor(t, "the seat held", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return slices.Contains(r.held, c.ID())
	})
}

// lines reads n lines from c, then checks nothing more arrives.
func lines(t *testing.T, c *Client, n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
		m, err := c.Receive(ctx)
		cancel()
		if err != nil {
			t.Fatalf("after %v: %v", out, err)
		}
		if m.Header.Type == lineType {
			out = append(out, string(m.Payload))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), resumeQuiet)
	defer cancel()
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			return out
		}
		if m.Header.Type == lineType {
			t.Fatalf("extra line %q after %v (a duplicate?)", m.Payload, out)
		}
	}
}

func seq(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// A client whose path goes dark past the timeout comes back to the same
// seat: same id, the game told "held" then "resumed" (never left, never
// admitted twice), and every reliable message sent either way — before
// the outage, during it, and to the held seat — delivered once, in order.
func TestResumeSameSeatAfterOutage(t *testing.T) {
	t.Run("timeout", func(t *testing.T) { testResumeSameSeat(t, newSeatRig(t, resumeHoldOK)) })
	// The reliability engine gives up before the liveness timeout: the
	// seat is held all the same, and takes messages while held.
	t.Run("delivery failure", func(t *testing.T) {
		testResumeSameSeat(t, newSeatRig(t, resumeHoldOK, func(c *ServerConfig) {
			c.Reliable.ConnectionTimeout, c.Timeout = 300*time.Millisecond, 2*time.Second
		}))
	})
}

func testResumeSameSeat(t *testing.T, r *seatRig) {
	c := r.dial(t, "ann")
	id := c.ID()
	for _, l := range seq("s", 1, 2) {
		_ = r.srv.Send(id, lineType, wire.ReliableOrdered, []byte(l))
	}
	r.srv.Flush()
	if got := lines(t, c, 2); !slices.Equal(got, seq("s", 1, 2)) {
		t.Fatalf("before the outage: %v", got)
	}

	r.link.SetDark(true)
	for _, l := range seq("s", 3, 5) {
		_ = r.srv.Send(id, lineType, wire.ReliableOrdered, []byte(l))
	}
	r.srv.Flush()
	for _, l := range seq("c", 1, 3) {
		if err := c.Send(lineType, wire.ReliableOrdered, []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	c.Flush()
	r.goDark(t, c)
	for _, l := range seq("s", 6, 7) { // to the held seat
		if err := r.srv.Send(id, lineType, wire.ReliableOrdered, []byte(l)); err != nil {
			t.Fatalf("send to a held seat: %v", err)
		}
	}
	if _, ok := c.Resumable(); !ok {
		t.Fatal("a timed-out client with a ticket is not resumable")
	}

	r.link.SetDark(false)
	ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
	defer cancel()
	nc, err := c.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if nc.ID() != id {
		t.Fatalf("resumed as client %d, want %d", nc.ID(), id)
	}
	if got := lines(t, nc, 5); !slices.Equal(got, seq("s", 3, 7)) {
		t.Fatalf("after the resumption: %v, want s3..s7 once each", got)
	}
	waitFor(t, "the client's lines", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) >= 3 })
	time.Sleep(resumeQuiet)
	r.mu.Lock()
	got, admitted, resumed, left := slices.Clone(r.got), slices.Clone(r.admitted), slices.Clone(r.resumed), len(r.left)
	r.mu.Unlock()
	if !slices.Equal(got, seq("c", 1, 3)) {
		t.Fatalf("the server received %v, want c1..c3 once each", got)
	}
	if !slices.Equal(admitted, []uint32{id}) || len(resumed) != 1 || resumed[0].ID != id || resumed[0].Name != "ann" || left != 0 {
		t.Fatalf("events: admitted %v, resumed %+v, left %d; want admitted once, resumed once, never left", admitted, resumed, left)
	}
	if resumed[0].Addr == c.sess.path.addr {
		t.Log("note: the relay kept the address")
	}
	waitFor(t, "a fresh ticket after the resumption", nc.HasResumeTicket)
	if n := r.srv.Counters().Resumed.Load(); n != 1 {
		t.Fatalf("resumed counter %d", n)
	}
	if r.srv.HeldSeats() != 0 {
		t.Fatalf("%d seats still held", r.srv.HeldSeats())
	}
	if err := nc.Send(lineType, wire.ReliableOrdered, []byte("after")); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	waitFor(t, "a line on the resumed session", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) == 4 })
}

// resumeDial is one resuming handshake with st, as Client.Resume makes it.
func resumeDial(r *seatRig, cfg ClientConfig, st *resumeFrom) (*Client, error) {
	cfg.resuming = st
	ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
	defer cancel()
	return Dial(ctx, cfg)
}

func wantRefused(t *testing.T, what string, err error, want wire.DisconnectReason) {
	t.Helper()
	var he *HandshakeError
	if !errors.As(err, &he) || he.Code != HandshakeRefusedName || he.Disconnect != want {
		t.Fatalf("%s: %v, want a refusal %v", what, err, want)
	}
}

// A ticket resumes once; without the session's key, for another name or
// at another server it resumes nothing, and the seat is not disturbed.
func TestResumeRefusals(t *testing.T) {
	r := newSeatRig(t, resumeHoldOK)
	c := r.dial(t, "bob")
	r.goDark(t, c)
	r.link.SetDark(false)
	st, err := c.takeResume()
	if err != nil {
		t.Fatal(err)
	}
	used := *st
	nc, err := resumeDial(r, r.clientConfig("bob"), st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	waitFor(t, "a fresh ticket", nc.HasResumeTicket)

	fresh := func() *resumeFrom { // the live seat's current ticket, with a spare engine
		nc.sess.mu.Lock()
		defer nc.sess.mu.Unlock()
		return &resumeFrom{id: nc.ID(), ticket: nc.rt.ticket, key: nc.sess.life.seat.key, engine: reliable.New(reliable.Config{}, time.Now())}
	}
	used.engine = reliable.New(reliable.Config{}, time.Now()) // the first went to nc
	_, err = resumeDial(r, r.clientConfig("bob"), &used)
	wantRefused(t, "a used ticket", err, wire.DisconnectResumeInvalid)

	stolen := fresh()
	_, _ = rand.Read(stolen.key[:])
	_, err = resumeDial(r, r.clientConfig("bob"), stolen)
	wantRefused(t, "a ticket without the session's key", err, wire.DisconnectResumeInvalid)

	_, err = resumeDial(r, r.clientConfig("eve"), fresh())
	wantRefused(t, "a ticket of another name", err, wire.DisconnectResumeInvalid)

	other := newSeatRig(t, resumeHoldOK)
	cfg := other.clientConfig("bob")
	_, err = resumeDial(other, cfg, fresh())
	wantRefused(t, "a ticket of another server", err, wire.DisconnectResumeInvalid)

	if got := r.srv.Counters().ResumeRefusedInvalid.Load(); got != 3 {
		t.Fatalf("ResumeInvalid counted %d, want 3", got)
	}
	// The seat is undisturbed: the resumed session still works.
	if err := r.srv.Send(nc.ID(), lineType, wire.ReliableOrdered, []byte("still")); err != nil {
		t.Fatal(err)
	}
	r.srv.Flush()
	if got := lines(t, nc, 1); got[0] != "still" {
		t.Fatalf("got %v", got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.left) != 0 || len(r.admitted) != 1 {
		t.Fatalf("refusals disturbed the game: left %v, admitted %v", r.left, r.admitted)
	}
}

// A seat not resumed within the hold is released: the game sees the player
// leave (Timeout) only then, and its ticket is refused ResumeExpired.
func TestResumeAfterHoldRefused(t *testing.T) {
	r := newSeatRig(t, 2*time.Second)
	c := r.dial(t, "cid")
	id := c.ID()
	c.sess.mu.Lock()
	st := &resumeFrom{id: id, ticket: c.rt.ticket, key: c.sess.life.seat.key, engine: reliable.New(reliable.Config{}, time.Now())}
	c.sess.mu.Unlock()
	r.goDark(t, c)
	r.mu.Lock()
	_, leftEarly := r.left[id]
	r.mu.Unlock()
	if leftEarly {
		t.Fatal("the player left when the seat was held")
	}
	waitFor(t, "the hold to end", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.left[id] == wire.DisconnectTimeout })
	if _, ok := c.Resumable(); ok {
		t.Fatal("resumable after the hold window")
	}
	if _, err := c.Resume(context.Background()); !errors.Is(err, ErrNotResumable) {
		t.Fatalf("Resume after the window: %v", err)
	}
	r.link.SetDark(false)
	_, err := resumeDial(r, r.clientConfig("cid"), st)
	wantRefused(t, "a ticket whose seat was released", err, wire.DisconnectResumeExpired)
	if r.srv.Counters().SeatsExpired.Load() != 1 || r.srv.HeldSeats() != 0 {
		t.Fatalf("expired %d, held %d", r.srv.Counters().SeatsExpired.Load(), r.srv.HeldSeats())
	}
}

// A server that holds no seats says so (ResumeRequest answered with
// hold_seconds 0), and one that does not know ResumeRequest refuses it
// (MessageRefused): either way the client is told at once, holds no
// ticket, and a timeout ends its connection as before.
func TestResumeNotOffered(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold time.Duration
		old  bool
	}{{"resume_seconds 0", -1, false}, {"an older server", resumeHoldOK, true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSeatRig(t, tc.hold)
			if tc.old {
				r.srv.Handle(wire.TypeResumeRequest, nil)
			}
			ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
			defer cancel()
			c, err := Dial(ctx, r.clientConfig("dee"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			c.sess.mu.Lock()
			answer := c.rt.answer
			c.sess.mu.Unlock()
			select {
			case <-answer:
			default:
				t.Fatal("Dial returned before the server answered ResumeRequest")
			}
			if c.HasResumeTicket() {
				t.Fatal("a ticket from a server that holds no seats")
			}
			r.link.SetDark(true)
			<-c.Done()
			if _, ok := c.Resumable(); ok {
				t.Fatal("resumable without a ticket")
			}
			if r.srv.Counters().ResumeTicketsIssued.Load() != 0 {
				t.Fatal("tickets counted")
			}
		})
	}
}

// A client that notices the outage before the server does resumes a seat
// that is still live: the new session takes it over (the old path is
// dropped without a Disconnect), and what the server had sent on the old
// one arrives once.
func TestResumeTakesOverLiveSession(t *testing.T) {
	r := newSeatRig(t, resumeHoldOK, func(c *ServerConfig) { c.Timeout = 20 * time.Second })
	c := r.dial(t, "eve")
	id := c.ID()
	r.link.SetDark(true)
	for _, l := range seq("s", 1, 3) {
		_ = r.srv.Send(id, lineType, wire.ReliableOrdered, []byte(l))
	}
	r.srv.Flush()
	<-c.Done()
	if n := r.srv.HeldSeats(); n != 0 {
		t.Fatalf("%d seats held: the server should not have noticed yet", n)
	}
	r.link.SetDark(false)
	ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
	defer cancel()
	nc, err := c.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if got := lines(t, nc, 3); !slices.Equal(got, seq("s", 1, 3)) || nc.ID() != id {
		t.Fatalf("client %d got %v", nc.ID(), got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.held) != 0 || len(r.resumed) != 1 || len(r.left) != 0 {
		t.Fatalf("held %v, resumed %v, left %v", r.held, r.resumed, r.left)
	}
	if n := len(r.srv.Clients()); n != 1 {
		t.Fatalf("%d clients listed, want 1", n)
	}
}

// A client that comes back before its own timeout, after the server held
// its seat, is simply heard again on its old session — by its connection
// id, or (a client that does not migrate) by its old address: the seat
// wakes, what the server sent meanwhile arrives once, and nobody resumed.
func TestResumeHeldSeatWakes(t *testing.T) {
	for _, noMigration := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoMigration=%v", noMigration), func(t *testing.T) {
			r := newSeatRig(t, resumeHoldOK)
			cfg := r.clientConfig("gus")
			cfg.Timeout, cfg.NoMigration = 20*time.Second, noMigration
			ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
			defer cancel()
			c, err := Dial(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			waitFor(t, "a ticket", c.HasResumeTicket)
			if !noMigration {
				waitFor(t, "a connection id", c.MigrationReady)
			}
			id := c.ID()
			r.link.SetDark(true)
			waitFor(t, "the seat held", func() bool { return r.srv.Held(id) })
			for _, l := range seq("s", 1, 3) {
				if err := r.srv.Send(id, lineType, wire.ReliableOrdered, []byte(l)); err != nil {
					t.Fatal(err)
				}
			}
			r.link.SetDark(false)
			if got := lines(t, c, 3); !slices.Equal(got, seq("s", 1, 3)) {
				t.Fatalf("got %v", got)
			}
			waitFor(t, "the seat awake", func() bool { return !r.srv.Held(id) && r.srv.HeldSeats() == 0 })
			select {
			case <-c.Done():
				t.Fatal("the client's connection ended")
			default:
			}
			if r.srv.Counters().SeatsWoken.Load() != 1 || r.srv.Counters().Resumed.Load() != 0 {
				t.Fatalf("woken %d, resumed %d", r.srv.Counters().SeatsWoken.Load(), r.srv.Counters().Resumed.Load())
			}
			if err := c.Send(lineType, wire.ReliableOrdered, []byte("hi")); err != nil {
				t.Fatal(err)
			}
			c.Flush()
			waitFor(t, "the client heard", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) == 1 })
		})
	}
}
