package wire

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// enc builds a payload by hand from typed fields: uint8, uint16, uint32,
// uint64, int32, float32 and Vec3 little-endian; string as a NetBuffer str;
// []byte raw. Hand-built bytes keep the parser tests independent of the
// encoders they check.
func enc(parts ...any) []byte {
	var w Writer
	for _, p := range parts {
		switch v := p.(type) {
		case uint8:
			w.U8(v)
		case uint16:
			w.U16(v)
		case uint32:
			w.U32(v)
		case uint64:
			w.U64(v)
		case int32:
			w.I32(v)
		case float32:
			w.F32(v)
		case Vec3:
			w.Vec3(v)
		case string:
			w.Str(v)
		case []byte:
			w.Raw(v)
		default:
			panic("enc: unsupported field type")
		}
	}
	return w.Bytes()
}

// parseCase is one input of a parser table: want nil means valid, else the
// parser's error must match want with errors.Is.
type parseCase struct {
	name string
	in   []byte
	want error
}

// runParseCases checks every case of a parser and, for the valid ones, that
// the result re-encodes to the same bytes.
func runParseCases[T any](t *testing.T, parse func([]byte) (T, error), encode func([]byte, *T) []byte, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parse(tc.in)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("parse(% x) = %v, want success", tc.in, err)
				}
				if out := encode(nil, &m); string(out) != string(tc.in) {
					t.Fatalf("re-encoding differs:\n got % x\nwant % x", out, tc.in)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("parse(% x) error = %v, want %v", tc.in, err, tc.want)
			}
			var zero T
			if !reflect.DeepEqual(m, zero) {
				t.Fatalf("failed parse returned partial data %+v", m)
			}
		})
	}
}

var (
	nan  = float32(math.NaN())
	pinf = float32(math.Inf(1))
	ninf = float32(math.Inf(-1))
)

func TestParseConnectRejected(t *testing.T) {
	runParseCases(t, ParseConnectRejected, AppendConnectRejected, []parseCase{
		{"full", enc(uint8(6), uint16(3), "server full"), nil},
		{"empty detail", enc(uint8(1), uint16(3), ""), nil},
		{"256-byte detail", enc(uint8(7), uint16(3), strings.Repeat("d", 256)), nil},
		{"unknown reason parses", enc(uint8(200), uint16(3), ""), nil},
		{"control characters allowed in detail", enc(uint8(4), uint16(3), "line1\nline2"), nil},
		{"257-byte detail", enc(uint8(7), uint16(3), strings.Repeat("d", 257)), errStringLong},
		{"NUL in detail", enc(uint8(7), uint16(3), "a\x00"), errBadString},
		{"invalid UTF-8", enc(uint8(7), uint16(3), "\xff"), errBadString},
		{"truncated", enc(uint8(7), uint16(3), uint8(0)), ErrOverrun},
		{"string runs past end", enc(uint8(7), uint16(3), uint16(5), []byte("abc")), ErrOverrun},
		{"trailing byte", enc(uint8(7), uint16(3), "", uint8(0)), ErrTrailing},
		{"empty", nil, ErrMalformedPayload},
	})
}

func TestParseDisconnect(t *testing.T) {
	runParseCases(t, ParseDisconnect, AppendDisconnect, []parseCase{
		{"with detail", enc(uint8(DisconnectKicked), "afk"), nil},
		{"no detail", enc(uint8(DisconnectTimeout), ""), nil},
		{"256-byte detail", enc(uint8(0), strings.Repeat("é", 128)), nil},
		{"unknown reason parses", enc(uint8(99), ""), nil},
		{"257-byte detail", enc(uint8(0), strings.Repeat("d", 257)), errStringLong},
		{"NUL in detail", enc(uint8(0), "\x00"), errBadString},
		{"invalid UTF-8", enc(uint8(0), "\xc3("), errBadString},
		{"2 bytes", enc(uint8(0), uint8(0)), ErrOverrun},
		{"trailing byte", enc(uint8(1), "x", uint8(1)), ErrTrailing},
	})
}

func TestParseHeartbeat(t *testing.T) {
	runParseCases(t, ParseHeartbeat, AppendHeartbeat, []parseCase{
		{"probe", enc(uint32(0x11223344), uint32(0)), nil},
		{"answer", enc(uint32(0), uint32(0x11223344)), nil},
		{"7 bytes", make([]byte, 7), ErrOverrun},
		{"9 bytes", make([]byte, 9), ErrTrailing},
	})
}

func TestParseAck(t *testing.T) {
	runParseCases(t, ParseAck, AppendAck, []parseCase{
		{"ack", enc(uint32(100), uint32(0x80000005), uint16(12)), nil},
		{"zero", make([]byte, 10), nil},
		{"9 bytes", make([]byte, 9), ErrOverrun},
		{"11 bytes", make([]byte, 11), ErrTrailing},
	})
}

func TestAckAcknowledges(t *testing.T) {
	a := Ack{Ack: 100, Bits: 0x80000005}
	want := map[uint32]bool{100: true, 99: true, 97: true, 68: true}
	for seq := uint32(0); seq < 200; seq++ {
		if got := a.Acknowledges(seq); got != want[seq] {
			t.Errorf("Ack{100, 0x80000005}.Acknowledges(%d) = %v, want %v", seq, got, want[seq])
		}
	}
	full := Ack{Ack: 40, Bits: math.MaxUint32}
	for seq := uint32(0); seq < 50; seq++ {
		want := seq >= 8 && seq <= 40
		if got := full.Acknowledges(seq); got != want {
			t.Errorf("Ack{40, all bits}.Acknowledges(%d) = %v, want %v", seq, got, want)
		}
	}
	// Near zero the bits name sequences below 1; none of them wraps to a high one.
	low := Ack{Ack: 2, Bits: math.MaxUint32}
	if !low.Acknowledges(1) || low.Acknowledges(math.MaxUint32) || low.Acknowledges(math.MaxUint32-5) {
		t.Errorf("Ack{2, all bits}: wrong answer near the start of the sequence space")
	}
	top := Ack{Ack: math.MaxUint32, Bits: 1}
	if !top.Acknowledges(math.MaxUint32) || !top.Acknowledges(math.MaxUint32-1) || top.Acknowledges(0) {
		t.Errorf("Ack{max, 1}: wrong answer at the top of the sequence space")
	}
}

func TestParseClientFinished(t *testing.T) {
	name64 := strings.Repeat("n", 64)
	cases := []parseCase{
		{"alice", enc("alice", uint16(0)), nil},
		{"32-byte name", enc(strings.Repeat("n", 32), uint16(0)), nil},
		{"ticket", enc("bob", uint16(3), []byte{1, 2, 3}), nil},
		{"256-byte ticket", enc("bob", uint16(256), make([]byte, 256)), nil},
		// The structure parses but the name breaks the rule: ErrNameInvalid.
		{"empty name", enc("", uint16(0)), ErrNameInvalid},
		{"33-byte name", enc(strings.Repeat("n", 33), uint16(0)), ErrNameInvalid},
		{"64-byte name field", enc(name64, uint16(0)), ErrNameInvalid},
		{"invalid UTF-8 name", enc("\xff\xfe", uint16(0)), ErrNameInvalid},
		{"NUL in name", enc("a\x00b", uint16(0)), ErrNameInvalid},
		{"control in name", enc("a\nb", uint16(0)), ErrNameInvalid},
		{"all white space", enc(" \u3000 ", uint16(0)), ErrNameInvalid},
		// The structure does not parse: malformed, whatever the name.
		{"65-byte name field", enc(name64+"n", uint16(0)), errStringLong},
		{"257-byte ticket", enc("bob", uint16(257), make([]byte, 257)), errTicketLong},
		{"ticket runs past end", enc("bob", uint16(4), []byte{1, 2, 3}), ErrOverrun},
		{"no ticket_len", enc("bob"), ErrOverrun},
		{"trailing byte (no resume extension)", enc("bob", uint16(0), uint8(0)), errResumeVersion},
		{"bad name and trailing byte", enc("", uint16(0), uint8(0)), errResumeVersion},
		{"resume extension without its ticket", enc("bob", uint16(0), uint8(1), uint8(0)), errResumeTicket},
		{"resume ticket over 200", enc("bob", uint16(0), uint8(1), uint8(201), make([]byte, 201+32)), errResumeTicket},
		{"resume proof truncated", enc("bob", uint16(0), uint8(1), uint8(1), uint8(9), make([]byte, 31)), ErrOverrun},
		{"after the resume proof", enc("bob", uint16(0), uint8(1), uint8(1), uint8(9), make([]byte, 33)), ErrTrailing},
		{"name runs past end", enc(uint16(10), []byte("abc")), ErrOverrun},
	}
	runParseCases(t, ParseClientFinished, AppendClientFinished, cases)
	for _, tc := range cases {
		_, err := ParseClientFinished(tc.in)
		if errors.Is(err, ErrNameInvalid) && errors.Is(err, ErrMalformedPayload) {
			t.Errorf("%s: ErrNameInvalid must not match ErrMalformedPayload", tc.name)
		}
		if tc.want != nil && tc.want != ErrNameInvalid && errors.Is(err, ErrNameInvalid) {
			t.Errorf("%s: structural failure reported as ErrNameInvalid", tc.name)
		}
	}
}

func TestParseClientFinishedDoesNotAlias(t *testing.T) {
	p := enc("bob", uint16(2), []byte{7, 8})
	m, err := ParseClientFinished(p)
	if err != nil {
		t.Fatal(err)
	}
	p[len(p)-1] = 0
	if m.Ticket[1] != 8 {
		t.Fatal("ClientFinished.Ticket aliases the receive buffer")
	}
}

func TestReasonStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{RejectProtocolMissing.String(), "ProtocolMissing"},
		{RejectBanned.String(), "Banned"},
		{RejectReason(0).String(), "RejectReason(0)"},
		{RejectAddressLimit.String(), "AddressLimit"},
		{RejectReason(9).String(), "RejectReason(9)"},
		{DisconnectUnknown.String(), "Unknown"},
		{DisconnectReliableDeliveryFailed.String(), "ReliableDeliveryFailed"},
		{DisconnectModuleFailure.String(), "ModuleFailure"},
		{DisconnectServerFull.String(), "ServerFull"},
		{DisconnectAddressLimit.String(), "AddressLimit"},
		{DisconnectResumeExpired.String(), "ResumeExpired"},
		{DisconnectResumeInvalid.String(), "ResumeInvalid"},
		{DisconnectReason(17).String(), "DisconnectReason(17)"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
	if DisconnectModuleFailure != 11 || RejectBanned != 7 || DisconnectNameInvalid != 9 || RejectAddressLimit != 8 || DisconnectAddressLimit != 13 {
		t.Error("reason codes drifted from §5.6/§8")
	}
}
