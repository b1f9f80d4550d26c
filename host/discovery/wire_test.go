package discovery

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

var testNonce = Nonce{1, 2, 3, 4, 5, 6, 7, 8}

var testInfo = Info{Name: "Test Arena", Map: "dust", Mode: 6, Players: 3, MaxPlayers: 16, GamePort: 27015, ProtocolVersion: 3}

func TestQueryRoundTrip(t *testing.T) {
	q := AppendQuery(nil, testNonce)
	if len(q) != QuerySize || string(q[:4]) != "SPKQ" || q[4] != 1 {
		t.Fatalf("query %x", q)
	}
	n, err := ParseQuery(q)
	if err != nil || n != testNonce {
		t.Fatalf("ParseQuery = %x, %v", n, err)
	}
}

func TestParseQueryRejects(t *testing.T) {
	valid := AppendQuery(nil, testNonce)
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(valid)) }
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"magic only", valid[:4], ErrMalformed},
		{"truncated", valid[:QuerySize-1], ErrMalformed},
		{"header only", valid[:headerSize], ErrMalformed},
		{"oversized", append(bytes.Clone(valid), 0), ErrMalformed},
		{"wrong magic", mod(func(b []byte) []byte { b[3] = 'X'; return b }), ErrMalformed},
		{"answer magic", mod(func(b []byte) []byte { b[3] = 'A'; return b }), ErrMalformed},
		{"version 0", mod(func(b []byte) []byte { b[4] = 0; return b }), ErrVersion},
		{"version 2", mod(func(b []byte) []byte { b[4] = 2; return b }), ErrVersion},
		{"padding", mod(func(b []byte) []byte { b[QuerySize-1] = 1; return b }), ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseQuery(tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("ParseQuery = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestAnswerRoundTrip(t *testing.T) {
	cases := []Info{
		testInfo,
		{GamePort: 1},
		{Name: strings.Repeat("é", 32), Map: strings.Repeat("m", 64), Mode: 255, Players: 65535, MaxPlayers: 65535, GamePort: 65535, ProtocolVersion: 65535},
	}
	for _, info := range cases {
		a, err := AppendAnswer(nil, testNonce, info)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) < MinAnswerSize || len(a) > MaxAnswerSize || len(a) > 3*QuerySize {
			t.Fatalf("answer of %d bytes", len(a))
		}
		n, got, err := ParseAnswer(a)
		if err != nil || n != testNonce || got != info {
			t.Fatalf("ParseAnswer = %x, %+v, %v; want %+v", n, got, err, info)
		}
	}
	full, _ := AppendAnswer(nil, testNonce, cases[2])
	if len(full) != MaxAnswerSize || MaxAnswerSize != 154 {
		t.Fatalf("largest answer %d bytes, MaxAnswerSize %d; §12 says 154", len(full), MaxAnswerSize)
	}
}

func TestAppendAnswerSanitizes(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"plain", "Arena", "Arena"},
		{"control", "a\x1b[2Jb", "a\uFFFD[2Jb"},
		{"newline", "a\nb", "a\uFFFDb"},
		{"C1 CSI", "a\u009bb", "a\uFFFDb"},
		{"bidi override", "a\u202eb", "a\uFFFDb"},
		{"isolate", "a\u2066b", "a\uFFFDb"},
		{"invalid UTF-8", "a\xffb", "a\uFFFDb"},
		{"long ASCII", strings.Repeat("x", 100), strings.Repeat("x", 64)},
		{"cut at rune", strings.Repeat("x", 63) + "é", strings.Repeat("x", 63)},
		{"three-byte runes", strings.Repeat("€", 30), strings.Repeat("€", 21)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info := testInfo
			info.Name, info.Map = tc.in, tc.in
			a, err := AppendAnswer(nil, testNonce, info)
			if err != nil {
				t.Fatal(err)
			}
			_, got, err := ParseAnswer(a)
			if err != nil || got.Name != tc.want || got.Map != tc.want {
				t.Fatalf("announced %q / %q (%v), want %q", got.Name, got.Map, err, tc.want)
			}
		})
	}
}

func TestAppendAnswerInfoRules(t *testing.T) {
	info := testInfo
	info.GamePort = 0
	if _, err := AppendAnswer(nil, testNonce, info); !errors.Is(err, ErrInfo) {
		t.Fatalf("game port 0: %v, want ErrInfo", err)
	}
	info = testInfo
	info.Players, info.MaxPlayers = 20, 16
	a, _ := AppendAnswer(nil, testNonce, info)
	if _, got, err := ParseAnswer(a); err != nil || got.Players != 16 {
		t.Fatalf("players above max announced as %d (%v), want 16", got.Players, err)
	}
}

func TestParseAnswerRejects(t *testing.T) {
	valid, _ := AppendAnswer(nil, testNonce, testInfo)
	nameAt := answerFixed
	mapAt := nameAt + 2 + len(testInfo.Name)
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(valid)) }
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"query", AppendQuery(nil, testNonce), ErrMalformed},
		{"wrong magic", mod(func(b []byte) []byte { b[0] = 'X'; return b }), ErrMalformed},
		{"version 2", mod(func(b []byte) []byte { b[4] = 2; return b }), ErrVersion},
		{"fixed part only", valid[:answerFixed], ErrMalformed},
		{"truncated map", valid[:len(valid)-1], ErrMalformed},
		{"trailing byte", append(bytes.Clone(valid), 0), ErrMalformed},
		{"game port 0", mod(func(b []byte) []byte { b[15], b[16] = 0, 0; return b }), ErrMalformed},
		{"players above max", mod(func(b []byte) []byte { b[17] = 17; return b }), ErrMalformed},
		{"name length past end", mod(func(b []byte) []byte {
			binary.LittleEndian.PutUint16(b[nameAt:], 60000)
			return b
		}), ErrMalformed},
		{"name longer than 64", func() []byte {
			b := append(bytes.Clone(valid[:nameAt]), 65, 0)
			b = append(b, strings.Repeat("n", 65)...)
			return append(b, 0, 0)
		}(), ErrMalformed},
		{"control in name", mod(func(b []byte) []byte { b[nameAt+2] = '\n'; return b }), ErrMalformed},
		{"invalid UTF-8 in map", mod(func(b []byte) []byte { b[mapAt+2] = 0xff; return b }), ErrMalformed},
		{"oversized datagram", append(bytes.Clone(valid), make([]byte, 200)...), ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ParseAnswer(tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("ParseAnswer = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCodecDoesNotAllocate(t *testing.T) {
	q := AppendQuery(nil, testNonce)
	bad := append(bytes.Clone(q), 0)
	dst := make([]byte, 0, MaxAnswerSize)
	info := testInfo
	info.Name = "bad\x00name\xff" + strings.Repeat("y", 80)
	allocs := testing.AllocsPerRun(1000, func() {
		ParseQuery(q)
		ParseQuery(bad)
		AppendQuery(dst[:0], testNonce)
		AppendAnswer(dst[:0], testNonce, info)
	})
	if allocs != 0 {
		t.Fatalf("codec allocates %v times per run", allocs)
	}
}
