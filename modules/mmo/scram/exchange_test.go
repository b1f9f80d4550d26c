package scram_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/scram"
)

// testIterations keeps PBKDF2 cheap in tests while meeting the default minimum.
const testIterations = scram.DefaultMinIterations

func th(label string) []byte {
	h := sha256.Sum256([]byte(label))
	return h[:]
}

func seeded(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	s[0] = byte(seed)
	return rand.NewChaCha8(s)
}

func register(t *testing.T, password string) scram.Verifier {
	t.Helper()
	v, err := scram.GenerateVerifier(password, testIterations, seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Check(0); err != nil {
		t.Fatal(err)
	}
	return v
}

// login runs a whole exchange; the client binds clientTH, the server serverTH.
func login(t *testing.T, v scram.Verifier, user, password string, clientTH, serverTH []byte) (clientFinal string, serverErr, clientErr error) {
	t.Helper()
	c, err := scram.NewClient(user, password, scram.ClientConfig{ChannelBinding: clientTH})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scram.NewServer(scram.ServerConfig{ChannelBinding: serverTH})
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.ReadClientFirst(c.First())
	if err != nil {
		return "", err, nil
	}
	if first.Username != user {
		t.Fatalf("server read username %q, want %q", first.Username, user)
	}
	sf, err := s.ServerFirst(v)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := c.Final(sf)
	if err != nil {
		t.Fatal(err)
	}
	final, serverErr := s.ReadClientFinal(cf)
	return cf, serverErr, c.Verify(final)
}

func TestLoginWithChannelBinding(t *testing.T) {
	v := register(t, "correct horse")
	cf, serr, cerr := login(t, v, "alice", "correct horse", th("s1"), th("s1"))
	if serr != nil || cerr != nil {
		t.Fatalf("server %v, client %v", serr, cerr)
	}
	if !strings.HasPrefix(cf, "c=cD1zcGFya2hvc3QtdGgsL") { // base64("p=sparkhost-th,,…")
		t.Errorf("client-final does not bind p=sparkhost-th: %s", cf)
	}
}

func TestWrongPassword(t *testing.T) {
	v := register(t, "correct horse")
	_, serr, cerr := login(t, v, "alice", "battery staple", th("s1"), th("s1"))
	if !errors.Is(serr, scram.ErrAuthFailed) {
		t.Fatalf("server: %v, want ErrAuthFailed", serr)
	}
	if !errors.Is(cerr, scram.ErrServerError) {
		t.Fatalf("client: %v, want ErrServerError", cerr)
	}
}

// A client talking to a relay binds the relay's session; the server sees its
// own session with the relay, so the proof fails there.
func TestRelayedLoginFailsChannelBinding(t *testing.T) {
	v := register(t, "pw")
	_, serr, _ := login(t, v, "alice", "pw", th("client-relay"), th("relay-server"))
	if !errors.Is(serr, scram.ErrChannelBinding) {
		t.Fatalf("server: %v, want ErrChannelBinding", serr)
	}
}

// A client-final recorded in one session is refused in another, whatever the
// attacker's nonce.
func TestRecordedProofReplayedInAnotherSession(t *testing.T) {
	v := register(t, "pw")
	recorded, serr, cerr := login(t, v, "alice", "pw", th("s1"), th("s1"))
	if serr != nil || cerr != nil {
		t.Fatal(serr, cerr)
	}
	first := "p=sparkhost-th,,n=alice,r=" + strings.Split(strings.Split(recorded, ",r=")[1], ",")[0][:24]
	s, _ := scram.NewServer(scram.ServerConfig{ChannelBinding: th("s2")})
	if _, err := s.ReadClientFirst(first); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ServerFirst(v); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadClientFinal(recorded); !errors.Is(err, scram.ErrChannelBinding) {
		t.Fatalf("a recorded proof in another session: %v, want ErrChannelBinding", err)
	}
}

func TestDowngradesRefused(t *testing.T) {
	for _, tc := range []struct{ name, first string }{
		{"no binding", "n,,n=alice,r=abc"},
		{"client thinks server has none", "y,,n=alice,r=abc"},
		{"other binding type", "p=tls-exporter,,n=alice,r=abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := scram.NewServer(scram.ServerConfig{ChannelBinding: th("s")})
			if _, err := s.ReadClientFirst(tc.first); !errors.Is(err, scram.ErrChannelBinding) {
				t.Fatalf("got %v, want ErrChannelBinding", err)
			}
		})
	}
	s, _ := scram.NewServer(scram.ServerConfig{})
	if _, err := s.ReadClientFirst("p=sparkhost-th,,n=alice,r=abc"); !errors.Is(err, scram.ErrChannelBinding) {
		t.Fatalf("server without binding accepted p=: %v", err)
	}
	// A client without binding against a server that requires it.
	_, serr, _ := func() (string, error, error) {
		c, _ := scram.NewClient("alice", "pw", scram.ClientConfig{})
		s, _ := scram.NewServer(scram.ServerConfig{ChannelBinding: th("s")})
		_, err := s.ReadClientFirst(c.First())
		return "", err, nil
	}()
	if !errors.Is(serr, scram.ErrChannelBinding) {
		t.Fatalf("got %v", serr)
	}
}

func TestMismatchedBindingInFinal(t *testing.T) {
	// The client-first says p=sparkhost-th but the final binds "n,,".
	v := register(t, "pw")
	s, _ := scram.NewServer(scram.ServerConfig{ChannelBinding: th("s")})
	if _, err := s.ReadClientFirst("p=sparkhost-th,,n=alice,r=abc"); err != nil {
		t.Fatal(err)
	}
	sf, _ := s.ServerFirst(v)
	nonce := strings.Split(strings.TrimPrefix(sf, "r="), ",")[0]
	final, err := s.ReadClientFinal("c=biws,r=" + nonce + ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	if !errors.Is(err, scram.ErrChannelBinding) || final != "e=channel-bindings-dont-match" {
		t.Fatalf("got %q, %v", final, err)
	}
}

func TestUnknownAccountLooksLikeWrongPassword(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	mock := scram.MockVerifier(secret, "ghost", scram.DefaultMinIterations)
	if err := mock.Check(0); err != nil {
		t.Fatalf("mock verifier is not a valid verifier: %v", err)
	}
	again := scram.MockVerifier(secret, "ghost", scram.DefaultMinIterations)
	if !bytes.Equal(mock.Salt, again.Salt) {
		t.Fatal("mock salt changes between attempts: it would reveal the name is unknown")
	}
	if other := scram.MockVerifier(secret, "ghost2", scram.DefaultMinIterations); bytes.Equal(other.Salt, mock.Salt) {
		t.Fatal("two names share a mock salt")
	}
	_, serr, _ := login(t, mock, "ghost", "anything", th("s"), th("s"))
	if !errors.Is(serr, scram.ErrAuthFailed) {
		t.Fatalf("got %v, want ErrAuthFailed", serr)
	}
}

func TestClientChecksServer(t *testing.T) {
	newClient := func(cfg scram.ClientConfig) (*scram.Client, string) {
		c, err := scram.NewClient("alice", "pw", cfg)
		if err != nil {
			t.Fatal(err)
		}
		first, _ := scram.ParseClientFirst(c.First())
		return c, first.Nonce
	}
	salt := "s=AAAAAAAAAAAAAAAAAAAAAA=="
	t.Run("nonce not extended", func(t *testing.T) {
		c, n := newClient(scram.ClientConfig{})
		if _, err := c.Final("r=" + n + "," + salt + ",i=4096"); !errors.Is(err, scram.ErrNonce) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("nonce replaced", func(t *testing.T) {
		c, _ := newClient(scram.ClientConfig{})
		if _, err := c.Final("r=abcdefgh," + salt + ",i=4096"); !errors.Is(err, scram.ErrNonce) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("too few iterations", func(t *testing.T) {
		c, n := newClient(scram.ClientConfig{})
		if _, err := c.Final("r=" + n + "x," + salt + ",i=4095"); !errors.Is(err, scram.ErrIterationsTooLow) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("too many iterations", func(t *testing.T) {
		c, n := newClient(scram.ClientConfig{MaxIterations: 5000})
		if _, err := c.Final("r=" + n + "x," + salt + ",i=5001"); !errors.Is(err, scram.ErrIterationsTooHigh) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("forged server signature", func(t *testing.T) {
		c, n := newClient(scram.ClientConfig{})
		if _, err := c.Final("r=" + n + "x," + salt + ",i=4096"); err != nil {
			t.Fatal(err)
		}
		if err := c.Verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="); !errors.Is(err, scram.ErrServerSignature) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("steps out of order", func(t *testing.T) {
		c, _ := newClient(scram.ClientConfig{})
		if err := c.Verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="); !errors.Is(err, scram.ErrState) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("binding of the wrong size", func(t *testing.T) {
		if _, err := scram.NewClient("alice", "pw", scram.ClientConfig{ChannelBinding: make([]byte, 31)}); !errors.Is(err, scram.ErrChannelBinding) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestServerStepsOutOfOrder(t *testing.T) {
	s, _ := scram.NewServer(scram.ServerConfig{})
	if _, err := s.ServerFirst(register(t, "pw")); !errors.Is(err, scram.ErrState) {
		t.Fatalf("ServerFirst before ReadClientFirst: %v", err)
	}
	s, _ = scram.NewServer(scram.ServerConfig{})
	if _, err := s.ReadClientFinal("c=biws,r=a,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="); !errors.Is(err, scram.ErrState) {
		t.Fatalf("ReadClientFinal first: %v", err)
	}
	s, _ = scram.NewServer(scram.ServerConfig{})
	if _, err := s.ReadClientFirst("n,,n=a,r=b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadClientFirst("n,,n=a,r=b"); !errors.Is(err, scram.ErrState) {
		t.Fatalf("second ReadClientFirst: %v", err)
	}
	if _, err := scram.NewServer(scram.ServerConfig{ChannelBinding: []byte{1}}); !errors.Is(err, scram.ErrChannelBinding) {
		t.Fatalf("short binding: %v", err)
	}
	s, _ = scram.NewServer(scram.ServerConfig{})
	if _, err := s.ReadClientFirst("n,a=admin,n=a,r=b"); !errors.Is(err, scram.ErrAuthzID) {
		t.Fatalf("authzid: %v", err)
	}
	s, _ = scram.NewServer(scram.ServerConfig{})
	if _, err := s.ReadClientFirst("n,,n=a,r=" + strings.Repeat("x", scram.MaxNonceLen)); !errors.Is(err, scram.ErrNonce) {
		t.Fatalf("long client nonce: %v", err)
	}
}

func TestMessagesNeverCarryThePassword(t *testing.T) {
	const password = "hunter2-secret-password"
	v := register(t, password)
	c, _ := scram.NewClient("alice", password, scram.ClientConfig{ChannelBinding: th("s")})
	s, _ := scram.NewServer(scram.ServerConfig{ChannelBinding: th("s")})
	first := c.First()
	s.ReadClientFirst(first)
	sf, _ := s.ServerFirst(v)
	cf, _ := c.Final(sf)
	for _, m := range []string{first, cf} {
		if strings.Contains(m, password) {
			t.Fatalf("message carries the password: %s", m)
		}
	}
	for _, b := range [][]byte{v.Salt, v.StoredKey[:], v.ServerKey[:]} {
		if bytes.Contains(b, []byte(password)) {
			t.Fatal("verifier carries the password")
		}
	}
}

func TestCheckPassword(t *testing.T) {
	for _, tc := range []struct {
		pw string
		ok bool
	}{
		{"pencil", true},
		{"with space ~!", true},
		{strings.Repeat("a", scram.MaxPasswordLen), true},
		{"", false},
		{strings.Repeat("a", scram.MaxPasswordLen+1), false},
		{"tab\there", false},
		{"del\x7f", false},
		{"caf\u00e9", false},
		{"nul\x00", false},
	} {
		if err := scram.CheckPassword(tc.pw); (err == nil) != tc.ok {
			t.Errorf("CheckPassword(%q) = %v, want ok=%v", tc.pw, err, tc.ok)
		}
	}
	if _, err := scram.NewClient("alice", "caf\u00e9", scram.ClientConfig{}); !errors.Is(err, scram.ErrPasswordInvalid) {
		t.Errorf("NewClient accepted a non-ASCII password: %v", err)
	}
	if _, err := scram.NewClient("", "pw", scram.ClientConfig{}); !errors.Is(err, scram.ErrUsernameInvalid) {
		t.Errorf("NewClient accepted an empty username: %v", err)
	}
}

func TestVerifierCheck(t *testing.T) {
	v := register(t, "pw")
	if err := v.Check(testIterations + 1); !errors.Is(err, scram.ErrIterationsTooLow) {
		t.Errorf("below the minimum: %v", err)
	}
	v.Iterations = scram.MaxIterations + 1
	if err := v.Check(0); !errors.Is(err, scram.ErrIterationsTooHigh) {
		t.Errorf("above the maximum: %v", err)
	}
	v = register(t, "pw")
	v.Salt = v.Salt[:15]
	if err := v.Check(0); !errors.Is(err, scram.ErrBadVerifier) {
		t.Errorf("short salt: %v", err)
	}
	if _, err := scram.NewVerifier("pw", nil, 4096); !errors.Is(err, scram.ErrBadVerifier) {
		t.Errorf("empty salt: %v", err)
	}
	if _, err := scram.NewVerifier("pw", []byte{1}, 0); !errors.Is(err, scram.ErrIterationsTooLow) {
		t.Errorf("zero iterations: %v", err)
	}
	// The same password and salt give the same verifier; another salt another.
	a, _ := scram.NewVerifier("pw", bytes.Repeat([]byte{1}, 16), 4096)
	b, _ := scram.NewVerifier("pw", bytes.Repeat([]byte{1}, 16), 4096)
	c, _ := scram.NewVerifier("pw", bytes.Repeat([]byte{2}, 16), 4096)
	if a.StoredKey != b.StoredKey || a.StoredKey == c.StoredKey {
		t.Error("verifier is not a function of password and salt")
	}
}
