package wire

import (
	"errors"
	"strings"
	"testing"
)

func opposite(d Direction) Direction { return BothDirections &^ d }

func TestValidateBuiltins(t *testing.T) {
	r := NewRegistry()
	for _, s := range builtinSamples() {
		t.Run(s.name, func(t *testing.T) {
			h := Header{Type: s.typ, Channel: s.ch}
			if err := r.Validate(s.travel, &h, s.payload); err != nil {
				t.Fatalf("valid sample: %v", err)
			}
			schema, _, _ := r.Lookup(s.typ)
			if schema.Direction != BothDirections {
				if err := r.Validate(opposite(s.travel), &h, s.payload); err != ErrWrongDirection {
					t.Errorf("opposite direction: %v, want ErrWrongDirection", err)
				}
			}
			for ch := Unreliable; ch <= ReliableOrdered; ch++ {
				wrong := Header{Type: s.typ, Channel: ch}
				if err := r.Validate(s.travel, &wrong, s.payload); ch != s.ch && err != ErrWrongChannel {
					t.Errorf("channel %v: %v, want ErrWrongChannel", ch, err)
				}
			}
			if schema.MaxLen < MaxPayload {
				long := make([]byte, schema.MaxLen+1)
				copy(long, s.payload)
				if err := r.Validate(s.travel, &h, long); err != ErrBadSize {
					t.Errorf("%d bytes: %v, want ErrBadSize", len(long), err)
				}
			}
			if err := r.Validate(s.travel, &h, s.payload[:schema.MinLen-1]); err != ErrBadSize {
				t.Errorf("%d bytes: %v, want ErrBadSize", schema.MinLen-1, err)
			}
			if len(s.payload) < int(schema.MaxLen) {
				if err := r.Validate(s.travel, &h, append(s.payload, 0)); !errors.Is(err, ErrMalformedPayload) {
					t.Errorf("trailing byte: %v, want malformed", err)
				}
			}
		})
	}
}

func TestValidateRules(t *testing.T) {
	r := NewRegistry()
	if err := r.Register("emotes", userSchema(1000)); err != nil {
		t.Fatal(err)
	}
	opaque := Schema{ID: 1001, Name: "Blob", Direction: BothDirections, Channel: Unreliable,
		MinLen: 0, MaxLen: 16, StringFieldOffset: NoStringFields}
	if err := r.Register("blobs", opaque); err != nil {
		t.Fatal(err)
	}
	c, s := ClientToServer, ServerToClient
	tests := []struct {
		name    string
		travel  Direction
		typ     MessageType
		ch      Channel
		payload []byte
		want    error
	}{
		{"type 0", c, 0, Unreliable, nil, ErrUnknownType},
		{"type 19", c, 19, Unreliable, nil, ErrUnknownType},
		{"game type 13 without sim/gamemsg", c, 13, Reliable, enc("", "hi"), ErrUnknownType},
		{"type 999", c, 999, Unreliable, nil, ErrUnknownType},
		{"unregistered 1002", c, 1002, Reliable, enc(uint32(0), "x"), ErrUnknownType},
		{"sealed ConnectAccepted", s, TypeConnectAccepted, Unreliable, make([]byte, 155), ErrMalformedPayload},
		{"sealed ConnectRejected", s, TypeConnectRejected, Unreliable, enc(uint8(1), uint16(3), ""), ErrMalformedPayload},
		{"travel 0", 0, TypeHeartbeat, Unreliable, make([]byte, 8), ErrWrongDirection},
		{"travel both", BothDirections, TypeHeartbeat, Unreliable, make([]byte, 8), ErrWrongDirection},
		{"ClientFinished with a bad name is the server's to answer", c, TypeConnect, Reliable, enc("", uint16(0)), nil},
		{"ClientFinished with 64 bytes of NUL", c, TypeConnect, Reliable, enc(strings.Repeat("\x00", 64), uint16(0)), nil},
		{"ClientFinished 65-byte name", c, TypeConnect, Reliable, enc(strings.Repeat("n", 65), uint16(0)), ErrMalformedPayload},
		{"ClientFinished trailing", c, TypeConnect, Reliable, enc("bob", uint16(0), uint8(0)), ErrMalformedPayload},
		{"ClientFinished from server", s, TypeConnect, Reliable, enc("bob", uint16(0)), ErrWrongDirection},
		{"disconnect NUL detail", c, TypeDisconnect, Unreliable, enc(uint8(1), "\x00"), ErrMalformedPayload},
		{"user: string", c, 1000, Reliable, enc(uint32(1), "héllo", []byte{9}), nil},
		{"user: empty string", c, 1000, Reliable, enc(uint32(1), ""), nil},
		{"user: string ends at payload end", c, 1000, Reliable, enc(uint32(1), uint16(2), []byte("ab")), nil},
		{"user: string past payload", c, 1000, Reliable, enc(uint32(1), uint16(3), []byte("ab")), ErrMalformedPayload},
		{"user: payload shorter than the string's prefix", c, 1000, Reliable, enc(uint32(1), uint8(0)), ErrMalformedPayload},
		{"user: payload ends at the string offset", c, 1000, Reliable, enc(uint32(1)), ErrMalformedPayload},
		{"user: NUL", c, 1000, Reliable, enc(uint32(1), "a\x00"), ErrMalformedPayload},
		{"user: invalid UTF-8", c, 1000, Reliable, enc(uint32(1), "\xe2\x82"), ErrMalformedPayload},
		{"user: control characters are not screened", c, 1000, Reliable, enc(uint32(1), "a\tb"), nil},
		{"user: too short", c, 1000, Reliable, []byte{0}, ErrBadSize},
		{"user: too long", c, 1000, Reliable, make([]byte, 101), ErrBadSize},
		{"user: wrong direction", s, 1000, Reliable, enc(uint32(1), ""), ErrWrongDirection},
		{"user: wrong channel", c, 1000, ReliableOrdered, enc(uint32(1), ""), ErrWrongChannel},
		{"user opaque: empty", s, 1001, Unreliable, nil, nil},
		{"user opaque: any bytes", c, 1001, Unreliable, []byte{0, 0xff, 0}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := Header{Type: tc.typ, Channel: tc.ch}
			err := r.Validate(tc.travel, &h, tc.payload)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestValidateZeroRegistry(t *testing.T) {
	var r Registry
	h := Header{Type: TypeHeartbeat}
	if err := r.Validate(ClientToServer, &h, make([]byte, 8)); err != nil {
		t.Fatalf("zero Registry: %v", err)
	}
	h.Type = 1000
	if err := r.Validate(ClientToServer, &h, nil); err != ErrUnknownType {
		t.Fatalf("zero Registry, type 1000: %v", err)
	}
}

func TestValidateAndParsePacketAllocateNothing(t *testing.T) {
	r := NewRegistry()
	if err := r.Register("emotes", userSchema(1000)); err != nil {
		t.Fatal(err)
	}
	samples := builtinSamples()
	packets := make([][]byte, 0, len(samples)+2)
	travels := make([]Direction, 0, len(samples)+2)
	for _, s := range samples {
		packets = append(packets, AppendPacket(nil, &Header{Type: s.typ, Channel: s.ch, Sequence: 3, OrderedSequence: 2}, s.payload))
		travels = append(travels, s.travel)
	}
	// Failing paths must not allocate either: a bad detail and a bad user string.
	packets = append(packets,
		AppendPacket(nil, &Header{Type: TypeDisconnect, Channel: Unreliable}, enc(uint8(1), "a\x00")),
		AppendPacket(nil, &Header{Type: 1000, Channel: Reliable}, enc(uint32(0), "\xff")))
	travels = append(travels, ClientToServer, ClientToServer)
	failures := 0
	allocs := testing.AllocsPerRun(100, func() {
		failures = 0
		for i, pkt := range packets {
			h, payload, err := ParsePacket(pkt)
			if err != nil {
				panic(err)
			}
			if r.Validate(travels[i], &h, payload) != nil {
				failures++
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("ParsePacket+Validate allocate %v times per run of %d packets, want 0", allocs, len(packets))
	}
	if failures != 2 {
		t.Fatalf("%d packets failed validation, want exactly the 2 bad ones", failures)
	}
}

func BenchmarkValidate(b *testing.B) {
	r := NewRegistry()
	samples := builtinSamples()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s := &samples[i%len(samples)]
		h := Header{Type: s.typ, Channel: s.ch}
		if err := r.Validate(s.travel, &h, s.payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateModuleType: a module type's message, as a game's
// traffic mostly is (the registry's lookup per message).
func BenchmarkValidateModuleType(b *testing.B) {
	r := NewRegistry()
	const id = MessageType(1001)
	if err := r.Register("mod", userSchema(id)); err != nil {
		b.Fatal(err)
	}
	payload := enc(uint32(0), "hi")
	h := Header{Type: id, Channel: Reliable}
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Validate(ClientToServer, &h, payload); err != nil {
			b.Fatal(err)
		}
	}
}
