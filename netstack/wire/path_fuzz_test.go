package wire

import (
	"bytes"
	"testing"
)

// FuzzPathMessages: the path message parsers never panic, accept exactly
// their size, and what they accept encodes back to the same bytes; Validate
// agrees with them in both directions.
func FuzzPathMessages(f *testing.F) {
	f.Add(true, []byte("\x10\x32\x54\x76\x98\xba\xdc\xfe"))
	f.Add(false, []byte("\x10\x32\x54\x76\x98\xba\xdc\xfe\xa1\xb2\xc3\xd4\xe5\xf6\x07\x18"))
	f.Add(true, []byte{})
	f.Add(false, make([]byte, 17))
	f.Fuzz(func(t *testing.T, challenge bool, p []byte) {
		typ, size := TypePathResponse, PathResponseSize
		var again []byte
		var err error
		if challenge {
			typ, size = TypePathChallenge, PathChallengeSize
			var m PathChallenge
			if m, err = ParsePathChallenge(p); err == nil {
				again = AppendPathChallenge(nil, &m)
			}
		} else {
			var m PathResponse
			if m, err = ParsePathResponse(p); err == nil {
				again = AppendPathResponse(nil, &m)
			}
		}
		if (err == nil) != (len(p) == size) {
			t.Fatalf("%v of %d bytes: %v", typ, len(p), err)
		}
		if err == nil && !bytes.Equal(again, p) {
			t.Fatalf("%v %x re-encodes to %x", typ, p, again)
		}
		for _, travel := range []Direction{ClientToServer, ServerToClient} {
			h := Header{Type: typ, Channel: Unreliable}
			if verr := NewRegistry().Validate(travel, &h, p); (verr == nil) != (err == nil) {
				t.Fatalf("Validate %v, parser %v", verr, err)
			}
		}
	})
}
