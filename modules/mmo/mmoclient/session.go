// Package mmoclient is the client side of the mmo module: a Session speaks
// docs/mmo.md over one sealed connection (requests with ids, the SCRAM
// login bound to the session, the character map kept from WorldUpdate),
// and Register adds the `mmo_session_*` commands
// to the player console. The load test drives Sessions directly.
package mmoclient

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/gateway"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/scram"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Conn is what a Session needs of a connection; *netstack.Client has it.
type Conn interface {
	Send(t wire.MessageType, ch wire.Channel, payload []byte) error
	ChannelBinding() [32]byte
}

// Character is what the session knows of a character near its own.
type Character struct {
	ID     uint32
	Name   string
	X, Y   float32
	moved  time.Time // last position change, for the moving/still lines
	moving bool
}

// Session is one connection's mmo state. Its methods are safe for
// concurrent use: requests from a command goroutine, Handle from the
// receive goroutine.
type Session struct {
	conn Conn
	// Event receives the unsolicited lines (appear, greeting, logged out…);
	// nil drops them.
	event func(line string)
	// Iterations for Register (default scram.DefaultIterations).
	Iterations int
	// Timeout bounds each request (default 10 s).
	Timeout time.Duration
	// Protocol is the mmo protocol the session states at login (docs/mmo.md
	// §1.1): 0 states mmoproto.Protocol; 1 behaves as a client of the first
	// protocol, which stated none (a test of old clients).
	Protocol uint16
	// Sent, when set, sees the plaintext of every request handed to the
	// channel (tests assert no password ever appears in it).
	Sent func(t wire.MessageType, payload []byte)
	// Follow, when set, follows a handoff to a neighbouring area's server
	// (docs/mmo.md §13): it connects to r.Addr pinning r.Pin, with
	// r.Ticket making the ClientFinished ticket, calls Adopt with the new
	// connection before any of its messages reaches Handle, and then feeds
	// Handle from it. nil: the session reports the handoff and stays.
	Follow func(ctx context.Context, r Redirect) error

	mu      sync.Mutex
	next    uint32
	key     ed25519.PrivateKey // the handoff key: tickets of this session's handoffs are bound to it
	area    string             // the area a handoff goes to, until admitted there
	waiting map[uint32]waiter
	account string
	self    uint32 // world id while in world
	selfNm  string
	known   map[uint32]*Character
	buf     []byte
	// up is the login in progress or just made, for the server's
	// VerifierUpgrade, which follows LoginResult at once when it comes.
	up *loginUpgrade
}

// loginUpgrade keeps a login's password for a VerifierUpgrade until by;
// ok is closed once the server proved it holds the account's verifier.
type loginUpgrade struct {
	password string
	ok       chan struct{}
	by       time.Time
}

// upgradeWindow is how long after a login the session keeps the password
// for a VerifierUpgrade.
const upgradeWindow = 10 * time.Second

// waiter is a request waiting for its answer.
type waiter struct {
	ch  chan mmoproto.Message
	req wire.MessageType
}

// NewSession returns a session over conn; event receives unsolicited lines.
func NewSession(conn Conn, event func(line string)) *Session {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // the system's random source failed
	}
	return &Session{conn: conn, event: event, key: key, waiting: make(map[uint32]waiter), known: make(map[uint32]*Character)}
}

// Redirect is a handoff to follow: connect to Addr pinning Pin, and send
// Ticket(th) as the ClientFinished ticket, th being the new session's
// channel binding.
type Redirect struct {
	Area, Addr, Pin string
	Ticket          func(channelBinding [32]byte) []byte
}

// Adopt makes conn the session's connection (a handoff's new one): the
// session's state carries over, and the server there logs it in by ticket.
func (s *Session) Adopt(conn Conn) {
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
}

func (s *Session) connection() Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

func (s *Session) emit(format string, args ...any) {
	if s.event != nil {
		s.event(fmt.Sprintf(format, args...))
	}
}

// stillAfter: a character whose position has not changed for this long is
// considered still (the next change prints a "moving" line again).
const stillAfter = time.Second

// Handle takes one incoming message; it reports whether it was the mmo's
// (a MessageRefused notice about a request of ours counts: see
// HandleRefused).
func (s *Session) Handle(m netstack.Message) bool {
	t := m.Header.Type
	if t == wire.TypeMessageRefused {
		return s.HandleRefused(m.Payload)
	}
	if t < mmoproto.FirstType || t > mmoproto.LastType {
		return false
	}
	msg, err := mmoproto.Parse(t, m.Payload)
	if err != nil {
		s.emit("mmo: ignored a malformed %s: %v", mmoproto.Name(t), err)
		return true
	}
	if e, ok := msg.(*mmoproto.Entered); ok && e.RequestID == 0 {
		s.handedIn(e)
		return true
	}
	if r, ok := msg.(*mmoproto.Result); ok && r.RequestID == 0 && r.Code != mmoproto.OK {
		s.unasked(r)
		return true
	}
	if id, ok := replyID(msg); ok {
		s.mu.Lock()
		w, found := s.waiting[id]
		delete(s.waiting, id)
		if e, entered := msg.(*mmoproto.Entered); found && entered && w.req == mmoproto.TypeEnter {
			// Before the reply is delivered: the own Appear right behind
			// Entered may be handled before Enter's caller runs again.
			s.self, s.selfNm = e.ID, e.Name
		}
		s.mu.Unlock()
		if found {
			w.ch <- msg
		}
		return true
	}
	// Event lines are emitted with s.mu held: the callback must not call
	// back into the session.
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	switch r := msg.(type) {
	case *mmoproto.WorldUpdate:
		s.appearLocked(r.Appear, now)
		s.movedLocked(r.Positions, now)
		s.disappearedLocked(r.Disappear)
	// The three lists one message each, as servers before WorldUpdate
	// sent them.
	case *mmoproto.Appear:
		s.appearLocked(r.Entries, now)
	case *mmoproto.Positions:
		s.movedLocked(r.Entries, now)
	case *mmoproto.Disappear:
		s.disappearedLocked(r.IDs)
	case *mmoproto.Greeting:
		s.emit("mmo greeting: %s greets %s", r.FromName, r.ToName)
	case *mmoproto.VerifierUpgrade:
		u := s.up
		s.up = nil
		if u == nil || now.After(u.by) {
			break // not right after this session's login: ignored
		}
		n := int(r.Iterations)
		if n < scram.DefaultMinIterations || n > scram.MaxIterations {
			s.emit("mmo verifier upgrade refused: %d iterations is outside %d..%d", n, scram.DefaultMinIterations, scram.MaxIterations)
			break
		}
		go s.upgradeVerifier(u, n)
	case *mmoproto.LoggedOut:
		s.account, s.self, s.selfNm, s.up = "", 0, "", nil
		clear(s.known)
		s.emit("mmo logged out: %s (%s)", r.Reason, r.Detail)
	case *mmoproto.Handoff:
		s.handoffLocked(r)
	case *mmoproto.TicketResult:
		if r.Code != mmoproto.OK {
			s.area = ""
			s.emit("mmo handoff refused: %s (%s)", r.Code, r.Detail)
			break
		}
		s.account = r.Account
	}
	return true
}

// handoffLocked takes the server's Handoff: the character left this area;
// the session is logged out here and follows (Follow) to the neighbour.
func (s *Session) handoffLocked(h *mmoproto.Handoff) {
	s.account, s.self, s.selfNm, s.area = "", 0, "", h.Area
	clear(s.known)
	s.emit("mmo handing over to %s at %s", h.Area, h.Addr)
	if s.Follow == nil {
		return
	}
	signed, key := h.Ticket, s.key
	r := Redirect{Area: h.Area, Addr: h.Addr, Pin: h.Pin, Ticket: func(th [32]byte) []byte { return gateway.Present(signed, key, th) }}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Follow(ctx, r); err != nil {
			s.mu.Lock()
			s.area = ""
			s.emit("mmo handoff failed: %v", err)
			s.mu.Unlock()
		}
	}()
}

// handedIn takes the Entered (request id 0) that follows an admission by
// ticket.
func (s *Session) handedIn(e *mmoproto.Entered) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.self, s.selfNm = e.ID, e.Name
	s.emit("mmo handed over to %s: in the world as %s at %.1f,%.1f", s.area, e.Name, e.X, e.Y)
	s.area = ""
}

// unasked takes a failure Result that answers no request (request id 0):
// after an admission by ticket, the character could not enter the world
// (docs/mmo.md §13).
func (s *Session) unasked(r *mmoproto.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.area != "" {
		s.emit("mmo handoff failed: %s (%s); log in with your password", r.Code, r.Detail)
		s.area = ""
		return
	}
	s.emit("mmo: the server reports %s (%s)", r.Code, r.Detail)
}

// replyID returns the request id of a reply message.
func replyID(m mmoproto.Message) (uint32, bool) {
	switch r := m.(type) {
	case *mmoproto.RegisterResult:
		return r.RequestID, true
	case *mmoproto.LoginChallenge:
		return r.RequestID, true
	case *mmoproto.LoginResult:
		return r.RequestID, true
	case *mmoproto.CharacterList:
		return r.RequestID, true
	case *mmoproto.Entered:
		return r.RequestID, true
	case *mmoproto.WhereResult:
		return r.RequestID, true
	case *mmoproto.Result:
		return r.RequestID, true
	}
	return 0, false
}

// request sends the message build makes with a fresh id and waits for its
// answer; a Result other than OK becomes its *mmoproto.Error.
func (s *Session) request(ctx context.Context, build func(id uint32) mmoproto.Message) (mmoproto.Message, error) {
	ch := make(chan mmoproto.Message, 1)
	s.mu.Lock()
	s.next++
	id := s.next
	msg := build(id)
	s.waiting[id] = waiter{ch: ch, req: msg.Type()}
	s.buf = msg.Append(s.buf[:0])
	payload := slices.Clone(s.buf)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, id)
		s.mu.Unlock()
	}()
	if s.Sent != nil {
		s.Sent(msg.Type(), payload)
	}
	if err := s.connection().Send(msg.Type(), wire.ReliableOrdered, payload); err != nil {
		return nil, err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if ref, ok := r.(refusal); ok {
			return nil, refusedError(msg.Type(), ref.n)
		}
		if res, ok := r.(*mmoproto.Result); ok {
			return r, res.Err()
		}
		return r, nil
	case <-t.C:
		return nil, fmt.Errorf("no answer to %s in %v", mmoproto.Name(msg.Type()), timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// refusal is what a waiting request gets when the server refused it.
type refusal struct {
	mmoproto.Message // nil: never read
	n                wire.MessageRefused
}

// HandleRefused takes a MessageRefused notice (netstack.ClientConfig.
// DeliverRefusals): the server refused a message of ours, so the requests
// of that type waiting for an answer fail at once — a module that is not
// running (NotLoaded, UnknownType) answers nothing. It reports whether a
// request was waiting.
func (s *Session) HandleRefused(payload []byte) bool {
	n, err := wire.ParseMessageRefused(payload)
	if err != nil || n.Type < mmoproto.FirstType || n.Type > mmoproto.LastType {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	waited := false
	for _, w := range s.waiting {
		if w.req == n.Type {
			select {
			case w.ch <- refusal{n: n}:
			default:
			}
			waited = true
		}
	}
	return waited
}

// refusedError says why the server refused a request.
func refusedError(t wire.MessageType, n wire.MessageRefused) error {
	why := "it refused it"
	switch n.Reason {
	case wire.RefusedNotLoaded, wire.RefusedUnknownType:
		why = "the mmo module is not running there (ask the operator: module list)"
	}
	return fmt.Errorf("the server refused %s (%s): %s", mmoproto.Name(t), n.Reason, why)
}

// errUnexpected reports a reply of the wrong type.
func errUnexpected(m mmoproto.Message) error {
	return fmt.Errorf("unexpected answer %s", mmoproto.Name(m.Type()))
}

// Register creates an account: the verifier is computed here; only salt,
// iteration count, StoredKey and ServerKey are sent.
func (s *Session) Register(ctx context.Context, account, password string) (string, error) {
	it := s.Iterations
	if it <= 0 {
		it = scram.DefaultIterations
	}
	v, err := scram.GenerateVerifier(password, it, nil)
	if err != nil {
		return "", err
	}
	r, err := s.request(ctx, func(id uint32) mmoproto.Message {
		m := &mmoproto.Register{RequestID: id, Account: account, Iterations: uint32(v.Iterations), StoredKey: v.StoredKey, ServerKey: v.ServerKey}
		copy(m.Salt[:], v.Salt)
		return m
	})
	if err != nil {
		return "", err
	}
	rr, ok := r.(*mmoproto.RegisterResult)
	if !ok {
		return "", errUnexpected(r)
	}
	return rr.Account, nil
}

// ErrServerNotProven: the server's final message did not prove it holds the
// account's verifier.
var ErrServerNotProven = errors.New("the server did not prove it knows the account (bad server signature): not logged in")

// statedProtocol is the protocol field of LoginStart: none for protocol 1.
func (s *Session) statedProtocol() uint16 {
	switch s.Protocol {
	case 0:
		return mmoproto.Protocol
	case 1:
		return 0
	}
	return s.Protocol
}

// Login runs the SCRAM-SHA-256 exchange bound to this connection's
// handshake transcript.
func (s *Session) Login(ctx context.Context, account, password string) (string, error) {
	cb := s.connection().ChannelBinding()
	cl, err := scram.NewClient(account, password, scram.ClientConfig{ChannelBinding: cb[:]})
	if err != nil {
		return "", err
	}
	r, err := s.request(ctx, func(id uint32) mmoproto.Message {
		return &mmoproto.LoginStart{RequestID: id, ClientFirst: cl.First(), Protocol: s.statedProtocol()}
	})
	if err != nil {
		return "", err
	}
	ch, ok := r.(*mmoproto.LoginChallenge)
	if !ok {
		return "", errUnexpected(r)
	}
	final, err := cl.Final(ch.ServerFirst)
	if err != nil {
		return "", err
	}
	// Kept from before LoginFinish: the VerifierUpgrade right behind
	// LoginResult may be handled before this goroutine runs again.
	u := &loginUpgrade{password: password, ok: make(chan struct{}), by: time.Now().Add(upgradeWindow)}
	s.mu.Lock()
	s.up = u
	s.mu.Unlock()
	proven := false
	defer func() {
		if proven {
			return // kept until u.by: the upgrade may still be on its way
		}
		s.mu.Lock()
		if s.up == u {
			s.up = nil
		}
		s.mu.Unlock()
	}()
	r, err = s.request(ctx, func(id uint32) mmoproto.Message {
		return &mmoproto.LoginFinish{RequestID: id, ClientFinal: final}
	})
	if err != nil {
		return "", err
	}
	lr, ok := r.(*mmoproto.LoginResult)
	if !ok {
		return "", errUnexpected(r)
	}
	if err := cl.Verify(lr.ServerFinal); err != nil {
		return "", ErrServerNotProven
	}
	s.mu.Lock()
	s.account = lr.Account
	s.mu.Unlock()
	proven = true
	close(u.ok)
	s.sendHandoffKey()
	return lr.Account, nil
}

// upgradeVerifier answers a VerifierUpgrade: a verifier of the password
// just proved, with a fresh salt and n iterations, sent in SetVerifier.
// It reports the outcome as an event line.
func (s *Session) upgradeVerifier(u *loginUpgrade, n int) {
	select {
	case <-u.ok:
	case <-time.After(time.Until(u.by)):
		return // the login failed (the server was not proven): no upgrade
	}
	v, err := scram.GenerateVerifier(u.password, n, nil)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = s.simple(ctx, func(id uint32) mmoproto.Message {
			m := &mmoproto.SetVerifier{RequestID: id, Iterations: uint32(n), StoredKey: v.StoredKey, ServerKey: v.ServerKey}
			copy(m.Salt[:], v.Salt)
			return m
		})
		cancel()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.emit("mmo verifier upgrade failed: %v", err)
		return
	}
	s.emit("mmo verifier upgraded to %d iterations", n)
}

// sendHandoffKey registers the session's handoff key with the server,
// without waiting: a server without areas (or an older one, which drops the
// type) never hands the session over, and nothing else depends on it.
func (s *Session) sendHandoffKey() {
	s.mu.Lock()
	s.next++
	m := &mmoproto.HandoffKey{RequestID: s.next}
	copy(m.Key[:], s.key.Public().(ed25519.PublicKey))
	s.buf = m.Append(s.buf[:0])
	payload := slices.Clone(s.buf)
	conn := s.conn
	s.mu.Unlock()
	if s.Sent != nil {
		s.Sent(m.Type(), payload)
	}
	conn.Send(m.Type(), wire.ReliableOrdered, payload)
}

// simple sends a request answered by Result{OK}.
func (s *Session) simple(ctx context.Context, build func(id uint32) mmoproto.Message) error {
	r, err := s.request(ctx, build)
	if err != nil {
		return err
	}
	if _, ok := r.(*mmoproto.Result); !ok {
		return errUnexpected(r)
	}
	return nil
}

// Logout ends the login.
func (s *Session) Logout(ctx context.Context) error {
	err := s.simple(ctx, func(id uint32) mmoproto.Message { return &mmoproto.Logout{RequestID: id} })
	if err == nil {
		s.mu.Lock()
		s.account, s.self, s.selfNm, s.up = "", 0, "", nil
		clear(s.known)
		s.mu.Unlock()
	}
	return err
}

// Characters lists the account's characters.
func (s *Session) Characters(ctx context.Context) ([]mmoproto.CharacterInfo, error) {
	r, err := s.request(ctx, func(id uint32) mmoproto.Message { return &mmoproto.CharacterListRequest{RequestID: id} })
	if err != nil {
		return nil, err
	}
	cl, ok := r.(*mmoproto.CharacterList)
	if !ok {
		return nil, errUnexpected(r)
	}
	return cl.Characters, nil
}

// Create creates a character.
func (s *Session) Create(ctx context.Context, name string) error {
	return s.simple(ctx, func(id uint32) mmoproto.Message { return &mmoproto.CharacterCreate{RequestID: id, Name: name} })
}

// Delete deletes a character.
func (s *Session) Delete(ctx context.Context, name string) error {
	return s.simple(ctx, func(id uint32) mmoproto.Message { return &mmoproto.CharacterDelete{RequestID: id, Name: name} })
}

// Enter enters the world as one of the account's characters.
func (s *Session) Enter(ctx context.Context, name string) (mmoproto.Entered, error) {
	r, err := s.request(ctx, func(id uint32) mmoproto.Message { return &mmoproto.Enter{RequestID: id, Name: name} })
	if err != nil {
		return mmoproto.Entered{}, err
	}
	e, ok := r.(*mmoproto.Entered)
	if !ok {
		return mmoproto.Entered{}, errUnexpected(r)
	}
	return *e, nil // Handle has set the own character
}

// Leave leaves the world.
func (s *Session) Leave(ctx context.Context) error {
	err := s.simple(ctx, func(id uint32) mmoproto.Message { return &mmoproto.Leave{RequestID: id} })
	if err == nil {
		s.mu.Lock()
		s.self, s.selfNm = 0, ""
		clear(s.known)
		s.mu.Unlock()
	}
	return err
}

// Move sets the movement direction (each of dx, dy within -1..1).
func (s *Session) Move(ctx context.Context, dx, dy float32) error {
	return s.simple(ctx, func(id uint32) mmoproto.Message { return &mmoproto.MoveIntent{RequestID: id, DX: dx, DY: dy} })
}

// Stop stops moving.
func (s *Session) Stop(ctx context.Context) error {
	return s.simple(ctx, func(id uint32) mmoproto.Message { return &mmoproto.Stop{RequestID: id} })
}

// Where asks the server where the character is.
func (s *Session) Where(ctx context.Context) (mmoproto.WhereResult, error) {
	r, err := s.request(ctx, func(id uint32) mmoproto.Message { return &mmoproto.Where{RequestID: id} })
	if err != nil {
		return mmoproto.WhereResult{}, err
	}
	w, ok := r.(*mmoproto.WhereResult)
	if !ok {
		return mmoproto.WhereResult{}, errUnexpected(r)
	}
	return *w, nil
}

// Greet greets a character by name.
func (s *Session) Greet(ctx context.Context, name string) error {
	return s.simple(ctx, func(id uint32) mmoproto.Message { return &mmoproto.Greet{RequestID: id, Target: name} })
}

// UploadPosition sends the older client-position upload (always refused).
func (s *Session) UploadPosition(ctx context.Context, x, y float32) error {
	return s.simple(ctx, func(id uint32) mmoproto.Message { return &mmoproto.PositionUpload{RequestID: id, X: x, Y: y} })
}

// Status describes the session.
type Status struct {
	Account   string // "" when not logged in
	Character string // "" when not in the world
	ID        uint32
	Known     int // characters in view, own included
}

// Status returns the session's state.
func (s *Session) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{Account: s.account, Character: s.selfNm, ID: s.self, Known: len(s.known)}
}

// Nearby returns the characters in view (own excluded), nearest first.
func (s *Session) Nearby() []Character {
	s.mu.Lock()
	defer s.mu.Unlock()
	self := s.known[s.self]
	out := make([]Character, 0, len(s.known))
	for id, c := range s.known {
		if id != s.self {
			out = append(out, *c)
		}
	}
	dist := func(c Character) float64 {
		if self == nil {
			return 0
		}
		return math.Hypot(float64(c.X-self.X), float64(c.Y-self.Y))
	}
	slices.SortFunc(out, func(a, b Character) int {
		if da, db := dist(a), dist(b); da != db {
			if da < db {
				return -1
			}
			return 1
		}
		return int(a.ID) - int(b.ID)
	})
	return out
}

// Self returns the own character as last replicated.
func (s *Session) Self() (Character, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.known[s.self]
	if c == nil {
		return Character{}, false
	}
	return *c, true
}

// appearLocked adds characters that came into view (under s.mu).
func (s *Session) appearLocked(entries []mmoproto.Appearance, now time.Time) {
	for _, a := range entries {
		s.known[a.ID] = &Character{ID: a.ID, Name: a.Name, X: a.X, Y: a.Y, moved: now}
		if a.ID != s.self {
			s.emit("mmo %s appeared at %.1f,%.1f", a.Name, a.X, a.Y)
		}
	}
}

// movedLocked applies new positions (under s.mu).
func (s *Session) movedLocked(entries []mmoproto.Position, now time.Time) {
	for _, p := range entries {
		c := s.known[p.ID]
		if c == nil {
			continue
		}
		if !c.moving || now.Sub(c.moved) > stillAfter {
			c.moving = true
			if p.ID != s.self {
				s.emit("mmo %s moving from %.1f,%.1f", c.Name, c.X, c.Y)
			}
		}
		c.X, c.Y, c.moved = p.X, p.Y, now
	}
}

// disappearedLocked forgets characters that left view (under s.mu).
func (s *Session) disappearedLocked(ids []uint32) {
	for _, id := range ids {
		if c := s.known[id]; c != nil && id != s.self {
			s.emit("mmo %s disappeared", c.Name)
		}
		delete(s.known, id)
	}
}
