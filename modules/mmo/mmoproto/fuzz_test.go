package mmoproto_test

import (
	"bytes"
	"errors"
	"testing"

	mp "github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// FuzzParse drives every parser (the type selects it). Its seed corpus lives
// in testdata/fuzz/FuzzParse. Properties: nothing panics; every error matches
// ErrMalformed; an accepted payload re-encodes to the same bytes and passes
// the type's schema in the wire registry (the schema is never stricter than
// the parser, so nothing the parser accepts is dropped before it).
func FuzzParse(f *testing.F) {
	for _, s := range samples() {
		if p := s.msg.Append(nil); len(p) <= 2048 {
			f.Add(uint16(s.msg.Type()), p)
		}
	}
	r := registry(f)
	f.Fuzz(func(t *testing.T, typ uint16, p []byte) {
		// Map most inputs onto the module's types.
		mt := wire.MessageType(typ)
		if mt < mp.FirstType-2 || mt > mp.LastType+2 {
			mt = mp.FirstType + wire.MessageType(typ)%(mp.LastType-mp.FirstType+1)
		}
		m, err := mp.Parse(mt, p)
		if err != nil {
			if !errors.Is(err, mp.ErrMalformed) {
				t.Fatalf("%s: error %v does not match ErrMalformed", mp.Name(mt), err)
			}
			return
		}
		if m.Type() != mt {
			t.Fatalf("parsed %s as %s", mp.Name(mt), mp.Name(m.Type()))
		}
		if out := m.Append(nil); !bytes.Equal(out, p) {
			t.Fatalf("%s: re-encoding differs:\n in % x\nout % x", mp.Name(mt), p, out)
		}
		s, _ := mp.SchemaOf(mt)
		if err := r.Validate(s.Direction, &wire.Header{Type: mt, Channel: wire.ReliableOrdered}, p); err != nil {
			t.Fatalf("%s: parser accepts what the schema refuses: %v", mp.Name(mt), err)
		}
	})
}
