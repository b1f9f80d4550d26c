package mmoclient

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
)

var bg = context.Background()

// TestRepliesMatchRequestIDs: two requests in flight answered out of order
// each get their own reply; replies with an unknown or an already answered
// id are ignored and leave the waiting requests alone.
func TestRepliesMatchRequestIDs(t *testing.T) {
	conn := newFakeConn(t)
	s := NewSession(conn, nil)
	s.Timeout = failBound
	type answer struct {
		w   mmoproto.WhereResult
		err error
	}
	where := func() (chan answer, sent) {
		ch := make(chan answer, 1)
		go func() {
			w, err := s.Where(bg)
			ch <- answer{w, err}
		}()
		return ch, conn.next(t)
	}
	recv := func(ch chan answer) answer {
		t.Helper()
		select {
		case a := <-ch:
			return a
		case <-time.After(failBound):
			t.Fatal("Where never returned")
			return answer{}
		}
	}

	a, reqA := where()
	b, reqB := where()
	idA, idB := requestID(reqA.msg), requestID(reqB.msg)
	if idA == idB {
		t.Fatalf("two requests in flight share the id %d", idA)
	}
	if n := waiters(s); n != 2 {
		t.Fatalf("%d waiters with two requests in flight", n)
	}

	deliver(t, s, &mmoproto.WhereResult{RequestID: idA + idB + 100, X: -1})
	if n := waiters(s); n != 2 {
		t.Fatalf("a reply with an unknown id changed the waiters: %d", n)
	}
	deliver(t, s, &mmoproto.WhereResult{RequestID: idB, ID: 7, X: 2})
	if got := recv(b); got.err != nil || got.w.X != 2 || got.w.RequestID != idB {
		t.Fatalf("second request: %+v %v, want its own reply (X 2)", got.w, got.err)
	}
	select {
	case got := <-a:
		t.Fatalf("first request answered by the second's reply: %+v %v", got.w, got.err)
	default:
	}
	deliver(t, s, &mmoproto.WhereResult{RequestID: idA, ID: 7, X: 1})
	if got := recv(a); got.err != nil || got.w.X != 1 || got.w.RequestID != idA {
		t.Fatalf("first request: %+v %v, want its own reply (X 1)", got.w, got.err)
	}
	// A second answer to an answered request finds nobody and must not block.
	deliver(t, s, &mmoproto.WhereResult{RequestID: idA, X: 3}, &mmoproto.Result{RequestID: idB})
	if n := waiters(s); n != 0 {
		t.Fatalf("%d waiters left after both answers", n)
	}
}

// TestRequestTimeout: an unanswered request fails exactly when Timeout (or
// its 10 s default) has passed, in virtual time, and leaves no waiter; its
// late answer is ignored.
func TestRequestTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		want    time.Duration
	}{
		{"configured", 250 * time.Millisecond, 250 * time.Millisecond},
		{"default", 0, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				conn := newFakeConn(t)
				s := NewSession(conn, nil)
				s.Timeout = tc.timeout
				start := time.Now()
				errc := make(chan error, 1)
				go func() {
					_, err := s.Where(bg)
					errc <- err
				}()
				req := <-conn.requests
				time.Sleep(tc.want - time.Millisecond)
				synctest.Wait()
				select {
				case err := <-errc:
					t.Fatalf("failed after %v, before its timeout %v: %v", time.Since(start), tc.want, err)
				default:
				}
				if n := waiters(s); n != 1 {
					t.Fatalf("%d waiters while the request waits", n)
				}
				time.Sleep(time.Millisecond)
				synctest.Wait()
				var err error
				select {
				case err = <-errc:
				default:
					t.Fatalf("still waiting %v after the timeout", time.Since(start)-tc.want)
				}
				if err == nil || !strings.Contains(err.Error(), "no answer to Where in "+tc.want.String()) {
					t.Fatalf("timeout error = %v", err)
				}
				if n := waiters(s); n != 0 {
					t.Fatalf("%d waiters left after the timeout", n)
				}
				deliver(t, s, &mmoproto.WhereResult{RequestID: requestID(req.msg)})
			})
		})
	}
}

// TestRequestEndsWithContextOrSendError: a cancelled context or a failed
// Send ends the request with that error and no waiter.
func TestRequestEndsWithContextOrSendError(t *testing.T) {
	t.Run("context", func(t *testing.T) {
		conn := newFakeConn(t)
		s := NewSession(conn, nil)
		s.Timeout = failBound
		ctx, cancel := context.WithCancel(bg)
		f := startCall(t, conn, func() error { return s.Stop(ctx) })
		cancel()
		if err := f.wait(t); !errors.Is(err, context.Canceled) {
			t.Fatalf("Stop with a cancelled context = %v", err)
		}
		if n := waiters(s); n != 0 {
			t.Fatalf("%d waiters left", n)
		}
	})
	t.Run("send", func(t *testing.T) {
		conn := newFakeConn(t)
		conn.sendErr = errors.New("connection closed")
		s := NewSession(conn, nil)
		if err := s.Greet(bg, "Bob"); !errors.Is(err, conn.sendErr) {
			t.Fatalf("Greet on a closed connection = %v", err)
		}
		if n := waiters(s); n != 0 {
			t.Fatalf("%d waiters left", n)
		}
	})
}

// TestErrorResultsCarryCode: a Result other than OK is an *mmoproto.Error
// whose code errors.As recovers and whose one-line text names the code.
func TestErrorResultsCarryCode(t *testing.T) {
	var s *Session
	for _, tc := range []struct {
		name   string
		call   func() error
		code   mmoproto.Code
		detail string
		text   string // in the error's text
	}{
		{"create taken", func() error { return s.Create(bg, "Alice") }, mmoproto.CharacterExists, "", "CharacterExists: that character name is taken"},
		{"enter before login", func() error { _, err := s.Enter(bg, "Alice"); return err }, mmoproto.NotLoggedIn, "", "NotLoggedIn: log in first"},
		{"characters before login", func() error { _, err := s.Characters(bg); return err }, mmoproto.NotLoggedIn, "", "NotLoggedIn"},
		{"where outside", func() error { _, err := s.Where(bg); return err }, mmoproto.NotInWorld, "", "NotInWorld"},
		{"greet too far", func() error { return s.Greet(bg, "Bob") }, mmoproto.TooFar, "Bob is 35.0 away", "TooFar: Bob is 35.0 away"},
		{"move out of range", func() error { return s.Move(bg, 2, 0) }, mmoproto.BadRequest, "", "BadRequest"},
		{"upload", func() error { return s.UploadPosition(bg, 1, 1) }, mmoproto.PositionUploadRefused, "", "PositionUploadRefused"},
		{"register taken", func() error { _, err := s.Register(bg, "alice", "pw"); return err }, mmoproto.AccountExists, "", "AccountExists"},
		{"login throttled", func() error { _, err := s.Login(bg, "alice", "pw"); return err }, mmoproto.Throttled, "", "Throttled"},
		{"logout", func() error { return s.Logout(bg) }, mmoproto.NotLoggedIn, "", "NotLoggedIn"},
		{"a newer server's code", func() error { return s.Leave(bg) }, mmoproto.Code(999), "", "Code(999)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := newFakeConn(t)
			s = NewSession(conn, nil)
			s.Iterations = testIterations
			s.Timeout = failBound
			f := startCall(t, conn, tc.call)
			deliver(t, s, &mmoproto.Result{RequestID: f.id(), Code: tc.code, RetryAfterMS: 30000, Detail: tc.detail})
			err := f.wait(t)
			if c, ok := code(err); !ok || c != tc.code {
				t.Fatalf("error %v carries code %v (%v), want %v", err, c, ok, tc.code)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.text) || strings.Contains(msg, "\n") {
				t.Fatalf("error text %q, want one line containing %q", msg, tc.text)
			}
			if st := s.Status(); st.Account != "" {
				t.Fatalf("logged in after an error: %+v", st)
			}
		})
	}
}

// TestUnexpectedReplies: a reply of the wrong type for its request is an
// error naming it (never a panic, never a success), and changes no state.
func TestUnexpectedReplies(t *testing.T) {
	var s *Session
	ok := func(id uint32) mmoproto.Message { return &mmoproto.Result{RequestID: id} }
	where := func(id uint32) mmoproto.Message { return &mmoproto.WhereResult{RequestID: id} }
	entered := func(id uint32) mmoproto.Message { return &mmoproto.Entered{RequestID: id, ID: 3, Name: "Eve"} }
	for _, tc := range []struct {
		name  string
		call  func() error
		reply func(id uint32) mmoproto.Message
		want  string
	}{
		{"register by Result OK", func() error { _, err := s.Register(bg, "alice", "pw"); return err }, ok, "Result"},
		{"register by Entered", func() error { _, err := s.Register(bg, "alice", "pw"); return err }, entered, "Entered"},
		{"login start by LoginResult", func() error { _, err := s.Login(bg, "alice", "pw"); return err },
			func(id uint32) mmoproto.Message {
				return &mmoproto.LoginResult{RequestID: id, Account: "alice", ServerFinal: "v=AAAA"}
			}, "LoginResult"},
		{"characters by WhereResult", func() error { _, err := s.Characters(bg); return err }, where, "WhereResult"},
		{"enter by Result OK", func() error { _, err := s.Enter(bg, "Alice"); return err }, ok, "Result"},
		{"where by Entered", func() error { _, err := s.Where(bg); return err }, entered, "Entered"},
		{"where by CharacterList", func() error { _, err := s.Where(bg); return err },
			func(id uint32) mmoproto.Message { return &mmoproto.CharacterList{RequestID: id} }, "CharacterList"},
		{"create by WhereResult", func() error { return s.Create(bg, "Alice") }, where, "WhereResult"},
		{"leave by Entered", func() error { return s.Leave(bg) }, entered, "Entered"},
		{"logout by RegisterResult", func() error { return s.Logout(bg) },
			func(id uint32) mmoproto.Message { return &mmoproto.RegisterResult{RequestID: id, Account: "x"} }, "RegisterResult"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := newFakeConn(t)
			s = NewSession(conn, nil)
			s.Iterations = testIterations
			s.Timeout = failBound
			s.mu.Lock()
			s.account, s.self, s.selfNm = "alice", 7, "Alice" // so that clearing would show
			s.known[7] = &Character{ID: 7, Name: "Alice"}
			s.mu.Unlock()
			f := startCall(t, conn, tc.call)
			deliver(t, s, tc.reply(f.id()))
			err := f.wait(t)
			if err == nil || !strings.Contains(err.Error(), "unexpected answer "+tc.want) {
				t.Fatalf("error = %v, want unexpected answer %s", err, tc.want)
			}
			if _, ok := code(err); ok {
				t.Fatalf("a type mismatch carries a protocol code: %v", err)
			}
			if st := s.Status(); st != (Status{Account: "alice", Character: "Alice", ID: 7, Known: 1}) {
				t.Fatalf("state changed by an unexpected answer: %+v", st)
			}
			if n := waiters(s); n != 0 {
				t.Fatalf("%d waiters left", n)
			}
		})
	}
}

// TestLoginFinishUnexpectedReply: a LoginFinish answered by anything but
// LoginResult fails the login, which does not count as logged in.
func TestLoginFinishUnexpectedReply(t *testing.T) {
	conn := newFakeConn(t)
	s := NewSession(conn, nil)
	s.Iterations = testIterations
	s.Timeout = failBound
	srv := newMMOServer(conn.binding)
	reg := startCall(t, conn, func() error { _, err := s.Register(bg, "alice", "pw"); return err })
	deliver(t, s, srv.answer(reg.req.msg))
	if err := reg.wait(t); err != nil {
		t.Fatal(err)
	}
	f := startCall(t, conn, func() error { _, err := s.Login(bg, "alice", "pw"); return err })
	deliver(t, s, srv.answer(f.req.msg))
	finish := conn.next(t)
	if finish.t != mmoproto.TypeLoginFinish {
		t.Fatalf("after the challenge the client sent %s", mmoproto.Name(finish.t))
	}
	deliver(t, s, &mmoproto.Result{RequestID: requestID(finish.msg)})
	if err := f.wait(t); err == nil || !strings.Contains(err.Error(), "unexpected answer Result") {
		t.Fatalf("login answered Result OK: %v", err)
	}
	if st := s.Status(); st.Account != "" {
		t.Fatalf("logged in without a LoginResult: %+v", st)
	}
}
