package mmoclient

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// serverMessages is one valid message of every server→client type.
func serverMessages() []mmoproto.Message {
	return []mmoproto.Message{
		&mmoproto.RegisterResult{RequestID: 1, Account: "alice"},
		&mmoproto.LoginChallenge{RequestID: 1, ServerFirst: "r=abcdef,s=AQIDBAUGBwgJCgsMDQ4PEA==,i=4096"},
		&mmoproto.LoginResult{RequestID: 1, Account: "alice", ServerFinal: "v=GlASnBNzsHLU7CXNkLn4gZkTEUik21PL7y30Ne5Rrpc="},
		&mmoproto.LoggedOut{Reason: mmoproto.LoggedOutKicked, Detail: "by the admin"},
		&mmoproto.CharacterList{RequestID: 1, Characters: []mmoproto.CharacterInfo{{Name: "Alice", X: 1, Y: 2}, {Name: "Alina", X: 3, Y: 4}}},
		&mmoproto.Entered{RequestID: 1, ID: 7, X: 500, Y: 500, Width: 1000, Height: 1000, Speed: 10, InterestRadius: 100, GreetRadius: 20, Name: "Alice"},
		&mmoproto.WhereResult{RequestID: 1, ID: 7, X: 1, Y: 2, DX: 1},
		&mmoproto.Appear{Tick: 1, Entries: []mmoproto.Appearance{{ID: 7, X: 1, Y: 2, Name: "Alice"}, {ID: 9, X: 3, Y: 4, Name: "Bob"}}},
		&mmoproto.Disappear{Tick: 2, IDs: []uint32{9, 10}},
		&mmoproto.Positions{Tick: 3, Entries: []mmoproto.Position{{ID: 7, X: 5, Y: 6}, {ID: 9, X: 7, Y: 8}}},
		&mmoproto.Greeting{FromID: 9, ToID: 7, FromName: "Bob", ToName: "Alice"},
		&mmoproto.Result{RequestID: 1, Code: mmoproto.Throttled, RetryAfterMS: 5, Detail: "wait"},
	}
}

// TestHandleLeavesOtherTypes: messages outside the module's ids are not the
// session's, whatever their payload.
func TestHandleLeavesOtherTypes(t *testing.T) {
	ev := new(eventLines)
	s := NewSession(newFakeConn(t), ev.add)
	appear := (&mmoproto.Appear{Entries: []mmoproto.Appearance{{ID: 9, Name: "Bob"}}}).Append(nil)
	for _, tp := range []wire.MessageType{0, gamemsg.TypeChatMessage, gamemsg.TypeGameStateSync, mmoproto.FirstType - 1, mmoproto.LastType + 1, 0xFFFF} {
		for _, p := range [][]byte{nil, appear, {1, 2, 3}} {
			if s.Handle(raw(tp, p)) {
				t.Errorf("Handle(type %d, %d bytes) = true", tp, len(p))
			}
		}
	}
	if lines := ev.take(); len(lines) != 0 {
		t.Errorf("event lines for other types: %q", lines)
	}
	if st := s.Status(); st.Known != 0 {
		t.Errorf("other types changed the session: %+v", st)
	}
}

// malformed returns broken variants of a valid payload of type t: every
// truncation, a trailing byte, and for a type with a screened string that
// string made invalid UTF-8 or given a NUL.
func malformed(t wire.MessageType, p []byte) [][]byte {
	var out [][]byte
	for n := range len(p) {
		out = append(out, p[:n])
	}
	out = append(out, append(bytes.Clone(p), 0))
	sc, _ := mmoproto.SchemaOf(t)
	if off := int(sc.StringFieldOffset); sc.StringFieldOffset != wire.NoStringFields && len(p) > off+2 {
		for _, b := range []byte{0xFF, 0} {
			q := bytes.Clone(p)
			q[off+2] = b
			out = append(out, q)
		}
	}
	return out
}

// TestHandleMalformedPayloads: a broken payload of any mmo type never
// panics and changes nothing; it is still the module's message (Handle
// reports true, as documented: "whether it was the mmo's") and shows one
// "ignored a malformed" line. A broken reply does not wake its request.
func TestHandleMalformedPayloads(t *testing.T) {
	conn := newFakeConn(t)
	ev := new(eventLines)
	s := NewSession(conn, ev.add)
	s.Timeout = failBound
	deliver(t, s, &mmoproto.Appear{Entries: []mmoproto.Appearance{{ID: 9, X: 1, Y: 1, Name: "Bob"}}})
	ev.take()
	f := startCall(t, conn, func() error { _, err := s.Where(bg); return err })
	id := f.id()
	before := s.Status()

	msgs := serverMessages()
	// A misbehaving server may also send client→server types.
	msgs = append(msgs, &mmoproto.Register{RequestID: id, Account: "alice", Iterations: 4096},
		&mmoproto.MoveIntent{RequestID: id, DX: 1}, &mmoproto.Greet{RequestID: id, Target: "Bob"})
	for _, m := range msgs {
		if r, ok := m.(*mmoproto.Result); ok {
			r.RequestID = id // so that a broken reply would reach the waiter
		}
		if w, ok := m.(*mmoproto.WhereResult); ok {
			w.RequestID = id
		}
		valid := m.Append(nil)
		for _, p := range malformed(m.Type(), valid) {
			if _, err := mmoproto.Parse(m.Type(), p); err == nil {
				continue // a shorter form that happens to be valid is no test
			}
			name := mmoproto.Name(m.Type())
			if !s.Handle(raw(m.Type(), p)) {
				t.Errorf("Handle(malformed %s, %d bytes) = false", name, len(p))
			}
			lines := ev.take()
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "mmo: ignored a malformed "+name+": ") {
				t.Errorf("malformed %s (%d bytes): lines %q", name, len(p), lines)
			}
		}
	}
	if st := s.Status(); st != before {
		t.Errorf("malformed payloads changed the session: %+v → %+v", before, st)
	}
	if n := waiters(s); n != 1 {
		t.Fatalf("a malformed reply woke the request: %d waiters", n)
	}
	select {
	case err := <-f.errc:
		t.Fatalf("Where ended on a malformed reply: %v", err)
	default:
	}
	deliver(t, s, &mmoproto.WhereResult{RequestID: id, X: 4})
	if err := f.wait(t); err != nil {
		t.Fatalf("Where after the malformed replies: %v", err)
	}
	// A valid client→server type from the server is claimed and ignored.
	for _, m := range []mmoproto.Message{&mmoproto.Stop{RequestID: 1}, &mmoproto.Logout{RequestID: 1}} {
		deliver(t, s, m)
	}
	if lines := ev.take(); len(lines) != 0 {
		t.Errorf("lines for client→server types: %q", lines)
	}
}

// FuzzSessionHandle: no payload of any type panics the session, and the
// session claims exactly the module's types.
func FuzzSessionHandle(f *testing.F) {
	for _, m := range serverMessages() {
		f.Add(uint16(m.Type()), m.Append(nil))
	}
	f.Add(uint16(mmoproto.TypeAppear), []byte{0, 0, 0, 0, 0xFF, 0xFF})
	f.Add(uint16(mmoproto.TypeCharacterList), []byte{1, 0, 0, 0, 200})
	f.Fuzz(func(t *testing.T, tp uint16, p []byte) {
		conn := newFakeConn(t)
		s := NewSession(conn, func(string) {})
		mt := wire.MessageType(tp)
		got := s.Handle(raw(mt, p))
		if want := mt >= mmoproto.FirstType && mt <= mmoproto.LastType; got != want {
			t.Fatalf("Handle(type %d) = %v, want %v", tp, got, want)
		}
		s.Nearby()
		s.Self()
		s.Status()
	})
}
