package scram_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/scram"
)

func TestParseClientFirst(t *testing.T) {
	ok := []struct {
		in   string
		want scram.ClientFirst
	}{
		{"n,,n=user,r=abc", scram.ClientFirst{CBFlag: 'n', Username: "user", Nonce: "abc"}},
		{"y,,n=user,r=abc", scram.ClientFirst{CBFlag: 'y', Username: "user", Nonce: "abc"}},
		{"p=sparkhost-th,,n=user,r=abc", scram.ClientFirst{CBFlag: 'p', CBName: "sparkhost-th", Username: "user", Nonce: "abc"}},
		{"n,a=adm=2Cin,n=u=3Dv=2Cw,r=~!", scram.ClientFirst{CBFlag: 'n', AuthzID: "adm,in", Username: "u=v,w", Nonce: "~!"}},
		{"n,,n=\u00e9l\u00e8ve,r=x", scram.ClientFirst{CBFlag: 'n', Username: "\u00e9l\u00e8ve", Nonce: "x"}},
	}
	for _, tc := range ok {
		got, err := scram.ParseClientFirst(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%q: got %+v, want %+v", tc.in, got, tc.want)
		}
		if s := got.String(); s != tc.in {
			t.Errorf("%q re-encodes as %q", tc.in, s)
		}
	}
	bad := []string{
		"", "n", "n,", "n,,", "x,,n=u,r=a", "p,,n=u,r=a", "p=,,n=u,r=a", "p=a_b,,n=u,r=a",
		"n,b=x,n=u,r=a", "n,a=,n=u,r=a", "n,,r=a,n=u", "n,,n=u", "n,,n=,r=a", "n,,n=u,r=",
		"n,,n=u=2c,r=a", "n,,n=u=,r=a", "n,,n=u=4F,r=a", "n,,n=u,r=a b", "n,,n=u,r=a\x7f",
		"n,,n=u,r=a,e=x", "n,,n=u,r=a,", "n,,m=ext,n=u,r=a", "n,,n=\xff,r=a", "n,,n=a\x00b,r=a",
		"n,,n=" + strings.Repeat("u", scram.MaxUsernameLen+1) + ",r=a",
		"n,,n=" + strings.Repeat("=2C", scram.MaxUsernameLen+1) + ",r=a",
		"n,,n=u,r=" + strings.Repeat("a", scram.MaxNonceLen+1),
		"n,,n=u,r=" + strings.Repeat("a", scram.MaxMessageLen),
	}
	for _, in := range bad {
		if m, err := scram.ParseClientFirst(in); !errors.Is(err, scram.ErrMalformed) {
			t.Errorf("%q: got %+v, %v; want ErrMalformed", in, m, err)
		}
	}
}

func TestParseServerFirst(t *testing.T) {
	in := "r=abc%def,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	m, err := scram.ParseServerFirst(in)
	if err != nil {
		t.Fatal(err)
	}
	if m.Nonce != "abc%def" || len(m.Salt) != 16 || m.Iterations != 4096 || m.String() != in {
		t.Fatalf("got %+v", m)
	}
	if m, err := scram.ParseServerFirst("r=a,s=AA==,i=2147483647"); err != nil || m.Iterations != 1<<31-1 {
		t.Fatalf("largest count: %+v %v", m, err)
	}
	bad := []string{
		"", "r=a", "r=a,s=AA==", "r=a,s=AA==,i=", "r=a,s=AA==,i=0", "r=a,s=AA==,i=04096",
		"r=a,s=AA==,i=-1", "r=a,s=AA==,i=2147483648", "r=a,s=AA==,i=99999999999", "r=a,s=AA==,i=1x",
		"r=a,s=,i=1", "r=a,s=AA,i=1", "r=a,s=AB==,i=1", "r=a,s=A===,i=1", "r=a,s=!!!!,i=1",
		"r=a,s=" + strings.Repeat("A", 4*((scram.MaxSaltLen+3)/3)) + ",i=1",
		"s=AA==,r=a,i=1", "r=a,s=AA==,i=1,x=y", "m=x,r=a,s=AA==,i=1", "r=a,b,s=AA==,i=1",
		// encoding/base64 would skip these: one value has one encoding.
		"r=a,s=W22ZaJ0SNY7s\r\noEsUEjb6gQ==,i=1", "r=a,s=W22ZaJ0SNY7soEsUEjb6gQ\n\n,i=1",
		"r=a,s=AAAAAA\n\n,i=1", "r=a,s=AAAA\r\n\r\n,i=1",
	}
	for _, in := range bad {
		if m, err := scram.ParseServerFirst(in); !errors.Is(err, scram.ErrMalformed) {
			t.Errorf("%q: got %+v, %v; want ErrMalformed", in, m, err)
		}
	}
}

func TestParseClientFinal(t *testing.T) {
	in := "c=biws,r=abc,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	m, err := scram.ParseClientFinal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.ChannelBinding) != "n,," || m.Nonce != "abc" || m.String() != in || m.WithoutProof() != "c=biws,r=abc" {
		t.Fatalf("got %+v", m)
	}
	bad := []string{
		"", "c=biws", "c=biws,r=abc", "c=biws,r=abc,p=", "c=,r=abc,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
		"c=biws,r=abc,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ", // unpadded
		"c=biws,r=abc,p=AAAA", // short proof
		"c=biws,r=abc,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=,x=y",
		"r=abc,c=biws,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
		"c=biws,r=abc,p=dHzbZapWIk4jUhN+Ute9\r\nytag9zjfMHgsqmmiz7AndVQ=",
		"c=bi\nws,r=abc,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
	}
	for _, in := range bad {
		if m, err := scram.ParseClientFinal(in); !errors.Is(err, scram.ErrMalformed) {
			t.Errorf("%q: got %+v, %v; want ErrMalformed", in, m, err)
		}
	}
}

func TestParseServerFinal(t *testing.T) {
	for _, in := range []string{"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", "e=invalid-proof"} {
		m, err := scram.ParseServerFinal(in)
		if err != nil || m.String() != in {
			t.Errorf("%q: %+v %v", in, m, err)
		}
	}
	for _, in := range []string{"", "v=", "e=", "e=a,b", "e=a=b", "v=AAAA", "x=1", "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=,e=x", "e=" + strings.Repeat("x", 65)} {
		if m, err := scram.ParseServerFinal(in); !errors.Is(err, scram.ErrMalformed) {
			t.Errorf("%q: got %+v, %v; want ErrMalformed", in, m, err)
		}
	}
}
