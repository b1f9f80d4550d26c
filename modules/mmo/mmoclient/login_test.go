package mmoclient

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/scram"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestPasswordNeverSent: Register and Login hand Send (and the Sent hook,
// which sees the same plaintext) neither the password nor SaltedPassword
// nor ClientKey (docs/mmo.md §6.3), in any encoding — yet the server logs
// the client in with what it was sent.
func TestPasswordNeverSent(t *testing.T) {
	const pw = "correct-horse-BATTERY-staple-42"
	p := newServed(t)
	var mu sync.Mutex
	var hooked []sent
	p.s.Sent = func(tp wire.MessageType, payload []byte) {
		mu.Lock()
		hooked = append(hooked, sent{t: tp, payload: bytes.Clone(payload)})
		mu.Unlock()
	}
	if name, err := p.s.Register(bg, "Alice", pw); err != nil || name != "alice" {
		t.Fatalf("Register = %q, %v", name, err)
	}
	if name, err := p.s.Login(bg, "alice", pw); err != nil || name != "alice" {
		t.Fatalf("Login = %q, %v", name, err)
	}
	if st := p.s.Status(); st.Account != "alice" {
		t.Fatalf("Status after Login = %+v", st)
	}

	onWire := p.conn.sentLog()
	mu.Lock()
	defer mu.Unlock()
	var types []wire.MessageType
	for i, r := range onWire {
		types = append(types, r.t)
		if i >= len(hooked) || hooked[i].t != r.t || !bytes.Equal(hooked[i].payload, r.payload) {
			t.Fatalf("Sent hook saw %d requests that differ from the %d sent", len(hooked), len(onWire))
		}
	}
	// After the login, the session registers its handoff key (unanswered).
	if want := []wire.MessageType{mmoproto.TypeRegister, mmoproto.TypeLoginStart, mmoproto.TypeLoginFinish, mmoproto.TypeHandoffKey}; !slices.Equal(types, want) || len(hooked) != len(want) {
		t.Fatalf("requests %v, want %v", types, want)
	}
	reg := onWire[0].msg.(*mmoproto.Register)
	if reg.Iterations != testIterations {
		t.Errorf("Register iterations %d, want the session's %d", reg.Iterations, testIterations)
	}
	salted := pbkdf2Key(t, pw, reg.Salt[:], int(reg.Iterations))
	clientKey := hmacSHA256(salted, "Client Key")
	secrets := map[string][]byte{"password": []byte(pw), "a part of the password": []byte("BATTERY")}
	for name, b := range map[string][]byte{"SaltedPassword": salted, "ClientKey": clientKey} {
		secrets[name] = b
		secrets[name+" in base64"] = []byte(base64.StdEncoding.EncodeToString(b))
		secrets[name+" in hex"] = []byte(hex.EncodeToString(b))
	}
	secrets["the password in base64"] = []byte(base64.StdEncoding.EncodeToString([]byte(pw)))
	for _, r := range onWire {
		for name, secret := range secrets {
			if bytes.Contains(r.payload, secret) {
				t.Errorf("%s carries the %s", mmoproto.Name(r.t), name)
			}
		}
	}
	// What was sent is the verifier of the password, nothing less.
	if want := sha256.Sum256(clientKey); reg.StoredKey != want {
		t.Error("Register's StoredKey is not H(ClientKey)")
	}
}

func pbkdf2Key(t *testing.T, pw string, salt []byte, iter int) []byte {
	t.Helper()
	k, err := pbkdf2.Key(sha256.New, pw, salt, iter, scram.KeyLen)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func hmacSHA256(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// TestRefusedPasswordSendsNothing: a password outside printable ASCII is
// refused before anything is sent (§6.2).
func TestRefusedPasswordSendsNothing(t *testing.T) {
	p := newServed(t)
	for _, pw := range []string{"", "pässword", "tab\there", strings.Repeat("x", scram.MaxPasswordLen+1)} {
		if _, err := p.s.Register(bg, "alice", pw); !errors.Is(err, scram.ErrPasswordInvalid) {
			t.Errorf("Register with %q = %v, want ErrPasswordInvalid", pw, err)
		}
		if _, err := p.s.Login(bg, "alice", pw); !errors.Is(err, scram.ErrPasswordInvalid) {
			t.Errorf("Login with %q = %v, want ErrPasswordInvalid", pw, err)
		}
	}
	if n := len(p.conn.sentLog()); n != 0 {
		t.Fatalf("%d requests sent for refused passwords", n)
	}
}

// TestLoginBoundToChannelBinding: the login names the sparkhost-th binding
// and its c= carries this connection's th; a server that knows another
// th for the session (a relay, a replay elsewhere) refuses the proof.
func TestLoginBoundToChannelBinding(t *testing.T) {
	p := newServed(t)
	if _, err := p.s.Register(bg, "alice", "pw-alice"); err != nil {
		t.Fatal(err)
	}
	other := testBinding
	other[5] ^= 0x80
	p.srv.mu.Lock()
	p.srv.binding = other[:]
	p.srv.mu.Unlock()

	_, err := p.s.Login(bg, "alice", "pw-alice")
	if c, ok := code(err); !ok || c != mmoproto.AuthFailed {
		t.Fatalf("login with another binding = %v, want AuthFailed", err)
	}
	p.srv.mu.Lock()
	finalErr := p.srv.finalErr
	p.srv.mu.Unlock()
	if !errors.Is(finalErr, scram.ErrChannelBinding) {
		t.Fatalf("the server refused the proof with %v, want ErrChannelBinding", finalErr)
	}
	if st := p.s.Status(); st.Account != "" {
		t.Fatalf("logged in over a mismatched binding: %+v", st)
	}

	log := p.conn.sentLog()
	start := log[len(log)-2].msg.(*mmoproto.LoginStart)
	finish := log[len(log)-1].msg.(*mmoproto.LoginFinish)
	if !strings.HasPrefix(start.ClientFirst, "p=sparkhost-th,,n=alice,r=") {
		t.Errorf("client-first %q does not bind sparkhost-th", start.ClientFirst)
	}
	cf, err := scram.ParseClientFinal(finish.ClientFinal)
	if err != nil {
		t.Fatalf("client-final %q: %v", finish.ClientFinal, err)
	}
	if want := append([]byte("p=sparkhost-th,,"), testBinding[:]...); !bytes.Equal(cf.ChannelBinding, want) {
		t.Errorf("c= carries %x, want gs2 header ‖ the connection's th", cf.ChannelBinding)
	}

	// The same login over the matching binding succeeds.
	p.srv.mu.Lock()
	p.srv.binding = testBinding[:]
	p.srv.mu.Unlock()
	if _, err := p.s.Login(bg, "alice", "pw-alice"); err != nil {
		t.Fatalf("login with the connection's binding: %v", err)
	}
}

// TestLoginServerNotProven: a server that accepts the proof but cannot
// sign the exchange with the account's ServerKey is not trusted: the login
// fails with ErrServerNotProven and the session is not logged in.
func TestLoginServerNotProven(t *testing.T) {
	for _, tc := range []struct {
		name  string
		final func(string) string
	}{
		{"one bit wrong", forged},
		{"a signature of other keys", func(string) string {
			return "v=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5A}, scram.KeyLen))
		}},
		{"an error attribute", func(string) string { return "e=other-error" }},
		{"not a server-final-message", func(string) string { return "ok" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newServed(t)
			if _, err := p.s.Register(bg, "alice", "pw-alice"); err != nil {
				t.Fatal(err)
			}
			p.srv.mu.Lock()
			p.srv.serverFinal = tc.final
			p.srv.mu.Unlock()
			name, err := p.s.Login(bg, "alice", "pw-alice")
			if !errors.Is(err, ErrServerNotProven) || name != "" {
				t.Fatalf("Login = %q, %v; want ErrServerNotProven", name, err)
			}
			if st := p.s.Status(); st.Account != "" {
				t.Fatalf("logged in to an unproven server: %+v", st)
			}
		})
	}
}

// TestLoginWrongPasswordOrAccount: the server's AuthFailed is the error,
// the same for a wrong password and an unknown account.
func TestLoginWrongPasswordOrAccount(t *testing.T) {
	p := newServed(t)
	if _, err := p.s.Register(bg, "alice", "pw-alice"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range [][2]string{{"alice", "pw-wrong"}, {"nobody", "pw-alice"}} {
		_, err := p.s.Login(bg, tc[0], tc[1])
		if c, ok := code(err); !ok || c != mmoproto.AuthFailed {
			t.Errorf("Login(%s, %s) = %v, want AuthFailed", tc[0], tc[1], err)
		}
		if st := p.s.Status(); st.Account != "" {
			t.Fatalf("logged in: %+v", st)
		}
	}
}

// TestLoginRefusesBadChallenge: the client checks the challenge before any
// proof: a nonce that does not extend its own, or an iteration count below
// RFC 7677's minimum, ends the login without a LoginFinish.
func TestLoginRefusesBadChallenge(t *testing.T) {
	salt := base64.StdEncoding.EncodeToString(make([]byte, 16))
	for _, tc := range []struct {
		name  string
		first func(cnonce string) string
		want  error
	}{
		{"weak iterations", func(n string) string { return "r=" + n + "srv,s=" + salt + ",i=1000" }, scram.ErrIterationsTooLow},
		{"foreign nonce", func(string) string { return "r=someoneelse,s=" + salt + ",i=4096" }, scram.ErrNonce},
		{"nonce not extended", func(n string) string { return "r=" + n + ",s=" + salt + ",i=4096" }, scram.ErrNonce},
		{"garbage", func(string) string { return "hello" }, scram.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := newFakeConn(t)
			s := NewSession(conn, nil)
			s.Timeout = failBound
			f := startCall(t, conn, func() error { _, err := s.Login(bg, "alice", "pw-alice"); return err })
			cf, err := scram.ParseClientFirst(f.req.msg.(*mmoproto.LoginStart).ClientFirst)
			if err != nil {
				t.Fatal(err)
			}
			deliver(t, s, &mmoproto.LoginChallenge{RequestID: f.id(), ServerFirst: tc.first(cf.Nonce)})
			if err := f.wait(t); !errors.Is(err, tc.want) {
				t.Fatalf("Login = %v, want %v", err, tc.want)
			}
			if n := conn.pending(); n != 0 {
				t.Fatalf("%d requests sent after a bad challenge", n)
			}
			if st := s.Status(); st.Account != "" {
				t.Fatalf("logged in: %+v", st)
			}
		})
	}
}
