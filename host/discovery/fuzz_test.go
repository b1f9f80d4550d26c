package discovery

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParseQuery: never panics, fails only with the two sentinels, and accepts
// exactly the canonical query, which re-encodes byte for byte.
func FuzzParseQuery(f *testing.F) {
	q := AppendQuery(nil, testNonce)
	f.Add(q)
	f.Add(q[:QuerySize-1])
	f.Add(append(bytes.Clone(q), 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseQuery(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if !bytes.Equal(AppendQuery(nil, n), b) {
			t.Fatalf("accepted a non-canonical query %x", b)
		}
	})
}

// FuzzParseAnswer: never panics, fails only with the two sentinels, accepts
// only answers within the size bound whose text is clean, and every accepted
// answer is exactly what AppendAnswer writes for what was parsed (so the
// sanitizer never changes an accepted answer).
func FuzzParseAnswer(f *testing.F) {
	a, _ := AppendAnswer(nil, testNonce, testInfo)
	f.Add(a)
	f.Add(a[:len(a)-1])
	f.Add(append(bytes.Clone(a), 0))
	empty, _ := AppendAnswer(nil, testNonce, Info{GamePort: 1})
	f.Add(empty)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, info, err := ParseAnswer(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			if info != (Info{}) {
				t.Fatalf("Info %+v returned with an error", info)
			}
			return
		}
		if len(b) > MaxAnswerSize || len(b) > 3*QuerySize {
			t.Fatalf("accepted a %d-byte answer", len(b))
		}
		if !validText([]byte(info.Name)) || !validText([]byte(info.Map)) || info.GamePort == 0 || info.Players > info.MaxPlayers {
			t.Fatalf("accepted bad info %+v", info)
		}
		again, err := AppendAnswer(nil, n, info)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("accepted answer %x re-encodes as %x (%v)", b, again, err)
		}
	})
}
