package roomauth

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
)

func fixedVerifier(t *testing.T, password string) Verifier {
	t.Helper()
	v, err := NewVerifier(password, DefaultIterations, bytes.NewReader(bytes.Repeat([]byte{7}, SaltLen)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestProofOpensOnlyItsRoomAndSession(t *testing.T) {
	v := fixedVerifier(t, "hunter2")
	var cb, other [32]byte
	cb[0], other[0] = 1, 2
	proof, err := Proof("hunter2", v.Salt, v.Iterations, 7, cb)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		room  uint32
		cb    [32]byte
		proof []byte
		want  bool
	}{
		{"right password, room and session", 7, cb, proof[:], true},
		{"another room", 8, cb, proof[:], false},
		{"another session", 7, other, proof[:], false},
		{"short proof", 7, cb, proof[:31], false},
		{"no proof", 7, cb, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := v.Check(c.room, c.cb, c.proof); got != c.want {
				t.Errorf("Check = %v, want %v", got, c.want)
			}
		})
	}
	wrong, _ := Proof("hunter3", v.Salt, v.Iterations, 7, cb)
	if v.Check(7, cb, wrong[:]) {
		t.Error("a wrong password's proof opened the room")
	}
}

// TestVector pins the construction: a client in another language checks
// its implementation against these bytes (docs/protocol.md §13.6); they
// were computed independently with Python's hashlib and hmac.
func TestVector(t *testing.T) {
	v := fixedVerifier(t, "hunter2")
	var cb [32]byte
	for i := range cb {
		cb[i] = byte(i)
	}
	proof, err := Proof("hunter2", v.Salt, v.Iterations, 7, cb)
	if err != nil {
		t.Fatal(err)
	}
	const wantStored = "489e16b5ac71c90b55865090db74a24876e7ee05a61896780f80c5588b36c73e"
	const wantProof = "f0b3705d41383e37f813c534270f0317e8714e985e01808f746a448720af9693"
	gotStored, gotProof := hex.EncodeToString(v.StoredKey[:]), hex.EncodeToString(proof[:])
	if gotStored != wantStored || gotProof != wantProof {
		t.Fatalf("vector changed:\nstored %s\nproof  %s", gotStored, gotProof)
	}
}

func TestBounds(t *testing.T) {
	for _, n := range []uint32{0, MinIterations - 1, MaxIterations + 1} {
		if _, err := NewVerifier("pw", n, rand.Reader); !errors.Is(err, ErrIterations) {
			t.Errorf("iterations %d: %v", n, err)
		}
	}
	if _, err := NewVerifier("", DefaultIterations, rand.Reader); !errors.Is(err, ErrPassword) {
		t.Errorf("empty password: %v", err)
	}
	if _, err := NewVerifier(string(make([]byte, MaxPasswordLen+1)), DefaultIterations, rand.Reader); !errors.Is(err, ErrPassword) {
		t.Errorf("long password: %v", err)
	}
}

func BenchmarkCheck(b *testing.B) {
	v, _ := NewVerifier("pw", DefaultIterations, rand.Reader)
	var cb [32]byte
	proof, _ := Proof("pw", v.Salt, v.Iterations, 1, cb)
	for b.Loop() {
		v.Check(1, cb, proof[:])
	}
}
