package mmoclient

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/scram"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// testIterations keeps PBKDF2 cheap: the least count a client accepts in a
// challenge.
const testIterations = scram.DefaultMinIterations

// failBound bounds every wait of these tests: reached only when a test is
// already failing, never for synchronisation.
const failBound = 20 * time.Second

// testBinding is the channel binding (th) of the fake connection.
var testBinding = [32]byte{0: 0xA0, 1: 0xA1, 31: 0xBF}

// sent is one request as the Session handed it to Conn.Send.
type sent struct {
	t       wire.MessageType
	payload []byte
	msg     mmoproto.Message
}

// fakeConn is the Conn a Session sees: it checks and decodes each request
// as the server's transport would and queues it, in order, for the server
// side of the test.
type fakeConn struct {
	t        testing.TB
	binding  [32]byte
	requests chan sent
	// sendErr, when set, fails every Send (a closed connection).
	sendErr error
	// inline, when set, runs on the sending goroutine, before Send returns;
	// the request is then not queued.
	inline func(req sent)

	mu  sync.Mutex
	log []sent // every request handed to Send
}

func newFakeConn(t testing.TB) *fakeConn {
	return &fakeConn{t: t, binding: testBinding, requests: make(chan sent, 64)}
}

func (c *fakeConn) ChannelBinding() [32]byte { return c.binding }

func (c *fakeConn) Send(t wire.MessageType, ch wire.Channel, payload []byte) error {
	if c.sendErr != nil {
		return c.sendErr
	}
	if ch != wire.ReliableOrdered {
		c.t.Errorf("%s sent on channel %v, want ReliableOrdered", mmoproto.Name(t), ch)
	}
	if !mmoproto.IsRequest(t) {
		c.t.Errorf("the client sent %s, which is not a request type", mmoproto.Name(t))
	}
	if sc, _ := mmoproto.SchemaOf(t); uint32(len(payload)) < sc.MinLen || uint32(len(payload)) > sc.MaxLen {
		c.t.Errorf("%s of %d bytes is outside its schema's %d..%d: a transport drops it", sc.Name, len(payload), sc.MinLen, sc.MaxLen)
	}
	msg, err := mmoproto.Parse(t, payload)
	if err != nil {
		c.t.Errorf("the client sent a malformed %s: %v", mmoproto.Name(t), err)
		return nil
	}
	req := sent{t: t, payload: bytes.Clone(payload), msg: msg}
	c.mu.Lock()
	c.log = append(c.log, req)
	c.mu.Unlock()
	if c.inline != nil {
		c.inline(req)
		return nil
	}
	select {
	case c.requests <- req:
	default:
		c.t.Errorf("fake connection: more than %d requests queued", cap(c.requests))
	}
	return nil
}

// next returns the next request the client sent.
func (c *fakeConn) next(t testing.TB) sent {
	t.Helper()
	select {
	case r := <-c.requests:
		return r
	case <-time.After(failBound):
		t.Fatalf("no request within %v", failBound)
		return sent{}
	}
}

// sentLog returns every request handed to Send so far.
func (c *fakeConn) sentLog() []sent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sent(nil), c.log...)
}

// pending reports how many requests are queued unread.
func (c *fakeConn) pending() int { return len(c.requests) }

// msgOf is m as the receive goroutine hands it to Session.Handle.
func msgOf(m mmoproto.Message) netstack.Message {
	return raw(m.Type(), m.Append(nil))
}

func raw(t wire.MessageType, payload []byte) netstack.Message {
	return netstack.Message{Header: wire.Header{Type: t, Channel: wire.ReliableOrdered}, Payload: payload}
}

// deliver hands replies to the session as its receive goroutine would and
// fails the test if one is not claimed.
func deliver(t testing.TB, s *Session, msgs ...mmoproto.Message) {
	t.Helper()
	for _, m := range msgs {
		if !s.Handle(msgOf(m)) {
			t.Errorf("Handle(%s) = false", mmoproto.Name(m.Type()))
		}
	}
}

// eventLines records a session's unsolicited lines.
type eventLines struct {
	mu    sync.Mutex
	lines []string
}

func (e *eventLines) add(line string) {
	e.mu.Lock()
	e.lines = append(e.lines, line)
	e.mu.Unlock()
}

// take returns the lines recorded since the last take.
func (e *eventLines) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.lines
	e.lines = nil
	return l
}

// mmoServer plays the mmo module's side of docs/mmo.md for one connection:
// accounts with their verifiers, the real scram.Server for logins, and the
// session rules of §9 (simplified: one character in the world at a time).
// Its methods are safe for concurrent use.
type mmoServer struct {
	mu sync.Mutex
	// binding is the th the server's transport knows for this client.
	binding []byte
	// serverFinal, when set, rewrites the server-final-message of a verified
	// login (a server that cannot prove itself).
	serverFinal func(final string) string
	// other answers the requests the login logic does not (nil: the §9
	// rules with Result{OK}).
	other func(req mmoproto.Message) mmoproto.Message
	// finalErr is the scram.Server's verdict on the last LoginFinish.
	finalErr error

	accounts map[string]scram.Verifier
	login    *scram.Server
	pending  string // the account of the login in progress
	account  string // "" when anonymous
	inWorld  string
}

func newMMOServer(binding [32]byte) *mmoServer {
	return &mmoServer{binding: binding[:], accounts: make(map[string]scram.Verifier)}
}

var mockSecret = []byte("mmoclient test server secret 0123456789")

// answer returns the one reply to req (docs/mmo.md §1).
func (m *mmoServer) answer(req mmoproto.Message) mmoproto.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(id uint32, c mmoproto.Code, detail string) mmoproto.Message {
		return &mmoproto.Result{RequestID: id, Code: c, Detail: detail}
	}
	switch r := req.(type) {
	case *mmoproto.Register:
		if m.account != "" {
			return fail(r.RequestID, mmoproto.AlreadyLoggedIn, "")
		}
		v := scram.Verifier{Salt: bytes.Clone(r.Salt[:]), Iterations: int(r.Iterations), StoredKey: r.StoredKey, ServerKey: r.ServerKey}
		if err := v.Check(0); err != nil {
			return fail(r.RequestID, mmoproto.IterationsTooLow, err.Error())
		}
		name := strings.ToLower(r.Account)
		if _, ok := m.accounts[name]; ok {
			return fail(r.RequestID, mmoproto.AccountExists, "")
		}
		m.accounts[name] = v
		return &mmoproto.RegisterResult{RequestID: r.RequestID, Account: name}
	case *mmoproto.LoginStart:
		if m.account != "" {
			return fail(r.RequestID, mmoproto.AlreadyLoggedIn, "")
		}
		srv, err := scram.NewServer(scram.ServerConfig{ChannelBinding: m.binding})
		if err != nil {
			return fail(r.RequestID, mmoproto.Internal, err.Error())
		}
		cf, err := srv.ReadClientFirst(r.ClientFirst)
		if err != nil {
			return fail(r.RequestID, mmoproto.BadRequest, "client-first: "+err.Error())
		}
		name := strings.ToLower(cf.Username)
		v, ok := m.accounts[name]
		if !ok {
			v = scram.MockVerifier(mockSecret, name, testIterations)
		}
		sf, err := srv.ServerFirst(v)
		if err != nil {
			return fail(r.RequestID, mmoproto.Internal, err.Error())
		}
		m.login, m.pending = srv, name
		return &mmoproto.LoginChallenge{RequestID: r.RequestID, ServerFirst: sf}
	case *mmoproto.LoginFinish:
		srv, name := m.login, m.pending
		m.login, m.pending = nil, ""
		if srv == nil {
			return fail(r.RequestID, mmoproto.OutOfOrder, "")
		}
		final, err := srv.ReadClientFinal(r.ClientFinal)
		m.finalErr = err
		if err != nil {
			return fail(r.RequestID, mmoproto.AuthFailed, "")
		}
		if m.serverFinal != nil {
			final = m.serverFinal(final)
		}
		m.account = name
		return &mmoproto.LoginResult{RequestID: r.RequestID, Account: name, ServerFinal: final}
	}
	if m.other != nil {
		return m.other(req)
	}
	return m.rules(req)
}

// rules answers the requests after login with the checks of §9.
func (m *mmoServer) rules(req mmoproto.Message) mmoproto.Message {
	id := requestID(req)
	res := func(c mmoproto.Code) mmoproto.Message { return &mmoproto.Result{RequestID: id, Code: c} }
	if _, ok := req.(*mmoproto.PositionUpload); ok {
		return res(mmoproto.PositionUploadRefused)
	}
	if m.account == "" {
		return res(mmoproto.NotLoggedIn)
	}
	switch r := req.(type) {
	case *mmoproto.Logout:
		m.account, m.inWorld = "", ""
	case *mmoproto.CharacterListRequest:
		return &mmoproto.CharacterList{RequestID: id, Characters: []mmoproto.CharacterInfo{{Name: "Alice", X: 500, Y: 500}}}
	case *mmoproto.Enter:
		if m.inWorld != "" {
			return res(mmoproto.AlreadyInWorld)
		}
		m.inWorld = r.Name
		return &mmoproto.Entered{RequestID: id, ID: 7, X: 500, Y: 500, Width: 1000, Height: 1000,
			Speed: 10, InterestRadius: 100, GreetRadius: 20, Name: r.Name}
	case *mmoproto.Leave, *mmoproto.MoveIntent, *mmoproto.Stop, *mmoproto.Greet:
		if m.inWorld == "" {
			return res(mmoproto.NotInWorld)
		}
		if _, ok := r.(*mmoproto.Leave); ok {
			m.inWorld = ""
		}
	case *mmoproto.Where:
		if m.inWorld == "" {
			return res(mmoproto.NotInWorld)
		}
		return &mmoproto.WhereResult{RequestID: id, ID: 7, X: 500, Y: 500, DX: 1}
	}
	return res(mmoproto.OK)
}

// forged returns a server-final-message whose signature is wrong in one bit.
func forged(final string) string {
	sig, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(final, "v="))
	if err != nil || len(sig) == 0 {
		return final
	}
	sig[0] ^= 1
	return "v=" + base64.StdEncoding.EncodeToString(sig)
}

// requestID returns the id every request starts with.
func requestID(m mmoproto.Message) uint32 {
	id, _ := mmoproto.PeekRequestID(m.Append(nil))
	return id
}

// serve answers every request on conn from its own goroutine, as the
// server's side of the connection does, until the test ends.
func (m *mmoServer) serve(t testing.TB, conn *fakeConn, s *Session) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case r := <-conn.requests:
				deliver(t, s, m.answer(r.msg))
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(done)
		<-stopped
	})
}

// served is a session over a fake connection whose server answers every
// request.
type served struct {
	s      *Session
	conn   *fakeConn
	srv    *mmoServer
	events *eventLines
}

func newServed(t testing.TB) *served {
	conn := newFakeConn(t)
	ev := new(eventLines)
	s := NewSession(conn, ev.add)
	s.Iterations = testIterations
	s.Timeout = failBound
	srv := newMMOServer(conn.binding)
	srv.serve(t, conn, s)
	return &served{s: s, conn: conn, srv: srv, events: ev}
}

// code returns the protocol code an error carries, or ok=false.
func code(err error) (mmoproto.Code, bool) {
	var e *mmoproto.Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	return 0, false
}

// waiters reports how many requests of s wait for an answer.
func waiters(s *Session) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting)
}

// flight is a request in flight: call runs on its own goroutine, as a
// console command does, while the test plays the server.
type flight struct {
	req  sent
	errc chan error
}

// startCall runs call and returns once its (first) request has been sent.
func startCall(t testing.TB, conn *fakeConn, call func() error) *flight {
	t.Helper()
	f := &flight{errc: make(chan error, 1)}
	go func() { f.errc <- call() }()
	f.req = conn.next(t)
	return f
}

// wait returns call's error.
func (f *flight) wait(t testing.TB) error {
	t.Helper()
	select {
	case err := <-f.errc:
		return err
	case <-time.After(failBound):
		t.Fatalf("%s still waiting after %v", mmoproto.Name(f.req.t), failBound)
		return nil
	}
}

// id is the request id of the flight's request.
func (f *flight) id() uint32 { return requestID(f.req.msg) }
