package scram_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/scram"
)

// TestBase64FieldsRefuseCRLF: encoding/base64 skips CR and LF even in
// Strict mode, so "AAAA" and "AA\r\nAA" would decode alike. Every base64
// field of every parser (s= of server-first, c= and p= of client-final,
// v= of server-final) refuses a CR, an LF or a CRLF at every position,
// including pairs that keep the length a multiple of 4.
func TestBase64FieldsRefuseCRLF(t *testing.T) {
	const (
		salt  = "W22ZaJ0SNY7soEsUEjb6gQ=="
		cb    = "biws"
		proof = "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
		sig   = "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
	)
	fields := []struct {
		name  string
		value string
		build func(v string) string
		parse func(string) error
	}{
		{"server-first s=", salt, func(v string) string { return "r=abc,s=" + v + ",i=4096" },
			func(s string) error { _, err := scram.ParseServerFirst(s); return err }},
		{"client-final c=", cb, func(v string) string { return "c=" + v + ",r=abc,p=" + proof },
			func(s string) error { _, err := scram.ParseClientFinal(s); return err }},
		{"client-final p=", proof, func(v string) string { return "c=" + cb + ",r=abc,p=" + v },
			func(s string) error { _, err := scram.ParseClientFinal(s); return err }},
		{"server-final v=", sig, func(v string) string { return "v=" + v },
			func(s string) error { _, err := scram.ParseServerFinal(s); return err }},
	}
	for _, f := range fields {
		if err := f.parse(f.build(f.value)); err != nil {
			t.Fatalf("%s: the valid message fails: %v", f.name, err)
		}
		n := 0
		for _, ins := range []string{"\r", "\n", "\r\n", "\n\n", "\r\r", "\r\n\r\n", "\n\r"} {
			for i := 0; i <= len(f.value); i++ {
				v := f.value[:i] + ins + f.value[i:]
				for _, msg := range []string{f.build(v), f.build(strings.ReplaceAll(v, "=", "") + ins)} {
					if err := f.parse(msg); !errors.Is(err, scram.ErrMalformed) {
						t.Errorf("%s: %q parsed (err %v)", f.name, msg, err)
					}
					n++
				}
			}
		}
		if n < 14*len(f.value) {
			t.Fatalf("%s: only %d cases", f.name, n)
		}
	}
}
