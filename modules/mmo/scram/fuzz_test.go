package scram_test

import (
	"errors"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/scram"
)

// Fuzz targets; their seed corpora live in testdata/fuzz/FuzzXxx. Properties:
// nothing panics, every error matches ErrMalformed, and an accepted message
// re-encodes to exactly its input (the syntax accepted is canonical).

func FuzzParseClientFirst(f *testing.F) {
	for _, s := range []string{"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", "p=sparkhost-th,,n=alice,r=abc", "n,a=x=2Cy,n=u=3D,r=~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := scram.ParseClientFirst(s)
		if err != nil {
			if !errors.Is(err, scram.ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		if out := m.String(); out != s {
			t.Fatalf("re-encoding differs:\n in %q\nout %q", s, out)
		}
	})
}

func FuzzParseServerFirst(f *testing.F) {
	f.Add("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
	f.Add("r=a,s=AA==,i=1")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := scram.ParseServerFirst(s)
		if err != nil {
			if !errors.Is(err, scram.ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		if out := m.String(); out != s {
			t.Fatalf("re-encoding differs:\n in %q\nout %q", s, out)
		}
	})
}

func FuzzParseClientFinal(f *testing.F) {
	f.Add("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := scram.ParseClientFinal(s)
		if err != nil {
			if !errors.Is(err, scram.ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		if out := m.String(); out != s {
			t.Fatalf("re-encoding differs:\n in %q\nout %q", s, out)
		}
	})
}

func FuzzParseServerFinal(f *testing.F) {
	f.Add("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
	f.Add("e=invalid-proof")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := scram.ParseServerFinal(s)
		if err != nil {
			if !errors.Is(err, scram.ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		if out := m.String(); out != s {
			t.Fatalf("re-encoding differs:\n in %q\nout %q", s, out)
		}
	})
}

// FuzzServerLogin drives a channel-bound Server with arbitrary client
// messages: it must never panic and never accept a proof it cannot verify.
func FuzzServerLogin(f *testing.F) {
	f.Add("p=sparkhost-th,,n=alice,r=abc", "c=cD1zcGFya2hvc3QtdGgsLA==,r=abc,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	f.Add("n,,n=user,r=rOprNGfwEbeRWgbNEkqO", "c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	v := scram.MockVerifier([]byte("fuzz secret 0123456789"), "alice", scram.DefaultMinIterations)
	f.Fuzz(func(t *testing.T, first, final string) {
		s, err := scram.NewServer(scram.ServerConfig{ChannelBinding: th("fuzz"), Rand: seeded(3)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadClientFirst(first); err != nil {
			return
		}
		if _, err := s.ServerFirst(v); err != nil {
			t.Fatal(err)
		}
		if out, err := s.ReadClientFinal(final); err == nil {
			t.Fatalf("server accepted a proof against a mock verifier: %q", out)
		}
	})
}
