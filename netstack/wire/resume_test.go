package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestResumeTicketCodec(t *testing.T) {
	good := ResumeTicket{HoldSeconds: 30, Lifetime: 3600, Ticket: bytes.Repeat([]byte{7}, 100)}
	b := AppendResumeTicket(nil, &good)
	if len(b) != 108 {
		t.Fatalf("encoded %d bytes, want 108", len(b))
	}
	got, err := ParseResumeTicket(b)
	if err != nil || got.HoldSeconds != 30 || got.Lifetime != 3600 || !bytes.Equal(got.Ticket, good.Ticket) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := ParseResumeTicket(AppendResumeTicket(nil, &ResumeTicket{})); err != nil {
		t.Fatalf("no-seats answer refused: %v", err)
	}
	cases := map[string][]byte{
		"version 2":             enc(uint8(2), uint16(30), uint32(1), uint8(1), uint8(9)),
		"hold without ticket":   enc(uint8(1), uint16(30), uint32(1), uint8(0)),
		"ticket without hold":   enc(uint8(1), uint16(0), uint32(0), uint8(1), uint8(9)),
		"lifetime without hold": enc(uint8(1), uint16(0), uint32(5), uint8(0)),
		"hold over an hour":     enc(uint8(1), uint16(3601), uint32(1), uint8(1), uint8(9)),
		"ticket over 200":       enc(uint8(1), uint16(30), uint32(1), uint8(201), make([]byte, 201)),
		"truncated":             enc(uint8(1), uint16(30), uint32(1), uint8(2), uint8(9)),
		"trailing":              enc(uint8(1), uint16(30), uint32(1), uint8(1), uint8(9), uint8(0)),
		"empty":                 {},
	}
	for name, p := range cases {
		if _, err := ParseResumeTicket(p); !errors.Is(err, ErrMalformedPayload) {
			t.Errorf("%s: %v, want malformed", name, err)
		}
		if err := validateBuiltin(TypeResumeTicket, p); err == nil {
			t.Errorf("%s: validated", name)
		}
	}
}

func TestResumeRequestAndExtension(t *testing.T) {
	if err := CheckResumeRequest(AppendResumeRequest(nil)); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{{}, {2}, {1, 0}} {
		if CheckResumeRequest(p) == nil {
			t.Errorf("% x accepted", p)
		}
	}
	ext := &ResumeExtension{Ticket: bytes.Repeat([]byte{3}, MaxResumeTicketLen)}
	ext.Proof[0], ext.Proof[31] = 1, 2
	cf := ClientFinished{Name: "bob", Ticket: []byte{9, 9}, Resume: ext}
	b := AppendClientFinished(nil, &cf)
	got, err := ParseClientFinished(b)
	if err != nil || got.Resume == nil || !bytes.Equal(got.Resume.Ticket, ext.Ticket) || got.Resume.Proof != ext.Proof || !bytes.Equal(got.Ticket, cf.Ticket) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if err := NewRegistry().Validate(ClientToServer, &Header{Type: TypeConnect, Channel: Reliable}, b); err != nil {
		t.Fatalf("the longest ClientFinished (%d bytes) does not validate: %v", len(b), err)
	}
	if plain, _ := ParseClientFinished(AppendClientFinished(nil, &ClientFinished{Name: "bob"})); plain.Resume != nil {
		t.Fatal("a ClientFinished without the extension parsed with one")
	}
}

// FuzzResumeTicket: whatever parses re-encodes byte for byte.
func FuzzResumeTicket(f *testing.F) {
	f.Add(AppendResumeTicket(nil, &ResumeTicket{HoldSeconds: 30, Lifetime: 3600, Ticket: []byte{1, 2, 3}}))
	f.Add(AppendResumeTicket(nil, &ResumeTicket{}))
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := ParseResumeTicket(p)
		if err != nil {
			return
		}
		if out := AppendResumeTicket(nil, &m); !bytes.Equal(out, p) {
			t.Fatalf("re-encoding differs:\n in % x\nout % x", p, out)
		}
	})
}

// FuzzClientFinished: whatever parses (also with the resume extension)
// re-encodes byte for byte, and the allocation-free scan agrees.
func FuzzClientFinished(f *testing.F) {
	ext := &ResumeExtension{Ticket: []byte{1, 2, 3}}
	f.Add(AppendClientFinished(nil, &ClientFinished{Name: "bob"}))
	f.Add(AppendClientFinished(nil, &ClientFinished{Name: "bob", Ticket: []byte{5}, Resume: ext}))
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := ParseClientFinished(p)
		_, _, scanErr := scanClientFinished(p)
		if (scanErr == nil) != (err == nil || err == ErrNameInvalid) {
			t.Fatalf("scan %v, parse %v", scanErr, err)
		}
		if err != nil {
			return
		}
		if out := AppendClientFinished(nil, &m); !bytes.Equal(out, p) {
			t.Fatalf("re-encoding differs:\n in % x\nout % x", p, out)
		}
	})
}
