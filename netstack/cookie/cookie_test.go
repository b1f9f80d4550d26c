package cookie

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

var (
	src     = netip.MustParseAddrPort("127.0.0.1:40000")
	binding = bytes.Repeat([]byte{0xAB}, 55)
)

// MAC is HMAC-SHA256 as crypto/hmac computes it, over the documented input.
func TestMACIsHMACSHA256(t *testing.T) {
	var secret [SecretSize]byte
	for i := range secret {
		secret[i] = byte(i)
	}
	for _, from := range []netip.AddrPort{src, netip.MustParseAddrPort("[2001:db8::7]:9"), netip.MustParseAddrPort("[::ffff:10.1.2.3]:5")} {
		msg := []byte(Label)
		msg = binary.LittleEndian.AppendUint32(msg, 77)
		a := from.Addr().Unmap().As16()
		msg = append(msg, a[:]...)
		msg = binary.LittleEndian.AppendUint16(msg, from.Port())
		msg = append(msg, binding...)
		h := hmac.New(sha256.New, secret[:])
		h.Write(msg)
		want := h.Sum(nil)[:MACSize]
		got := MAC(&secret, 77, from, binding)
		if !bytes.Equal(got[:], want) {
			t.Fatalf("%v: MAC %x, want %x", from, got, want)
		}
	}
}

func TestMintVerify(t *testing.T) {
	j := NewJar(10*time.Second, nil)
	c, err := j.Mint(t0, src, binding)
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Clone(binding)
	other[54] ^= 1
	cases := []struct {
		name    string
		at      time.Duration
		from    netip.AddrPort
		binding []byte
		cookie  []byte
		want    Result
	}{
		{"same source and hello", 0, src, binding, c[:], Valid},
		{"other port", 0, netip.AddrPortFrom(src.Addr(), 40001), binding, c[:], Invalid},
		{"other address", 0, netip.MustParseAddrPort("127.0.0.2:40000"), binding, c[:], Invalid},
		{"other hello", 0, src, other, c[:], Invalid},
		{"short", 0, src, binding, c[:Size-1], Invalid},
		{"flipped MAC bit", 0, src, binding, flip(c[:], Size-1), Invalid},
		{"future slot", 0, src, binding, withSlot(c[:], 5), Expired},
		// Time only moves forward in a jar: these come last.
		{"next slot", 19 * time.Second, src, binding, c[:], Valid},
		{"two slots later", 20 * time.Second, src, binding, c[:], Expired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := j.Verify(t0.Add(tc.at), tc.from, tc.binding, tc.cookie); got != tc.want {
				t.Fatalf("Verify = %v, want %v", got, tc.want)
			}
		})
	}
}

func flip(c []byte, i int) []byte { d := bytes.Clone(c); d[i] ^= 1; return d }
func withSlot(c []byte, s uint32) []byte {
	d := bytes.Clone(c)
	binary.LittleEndian.PutUint32(d, s)
	return d
}

// Each slot has a fresh secret: a cookie of slot n recomputed with slot n+1's
// number is not valid, and after a gap of several slots even the previous
// secret is gone.
func TestRotationDrawsFreshSecrets(t *testing.T) {
	j := NewJar(time.Second, nil)
	c0, _ := j.Mint(t0, src, binding)
	c1, _ := j.Mint(t0.Add(time.Second), src, binding)
	if bytes.Equal(c0[4:], c1[4:]) {
		t.Fatal("two slots minted the same MAC")
	}
	if got := j.Verify(t0.Add(time.Second), src, binding, withSlot(c0[:], 1)); got != Invalid {
		t.Fatalf("slot 0's MAC under slot 1: %v", got)
	}
	if got := j.Verify(t0.Add(1500*time.Millisecond), src, binding, c0[:]); got != Valid {
		t.Fatalf("previous slot's cookie: %v", got)
	}
	if got := j.Verify(t0.Add(5*time.Second), src, binding, c1[:]); got != Expired {
		t.Fatalf("after a gap: %v", got)
	}
	// Time going backwards stays in the current slot.
	c5, _ := j.Mint(t0.Add(5*time.Second), src, binding)
	if got := j.Verify(t0, src, binding, c5[:]); got != Valid {
		t.Fatalf("earlier time: %v", got)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

func TestRandomnessFailure(t *testing.T) {
	j := NewJar(time.Second, failingReader{})
	if _, err := j.Mint(t0, src, binding); err == nil {
		t.Fatal("Mint without randomness succeeded")
	}
}

func TestNoAllocations(t *testing.T) {
	j := NewJar(time.Hour, nil)
	c, _ := j.Mint(t0, src, binding)
	if n := testing.AllocsPerRun(1000, func() { j.Mint(t0, src, binding) }); n != 0 {
		t.Errorf("Mint allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { j.Verify(t0, src, binding, c[:]) }); n != 0 {
		t.Errorf("Verify allocates %v times", n)
	}
}

func BenchmarkVerify(b *testing.B) {
	j := NewJar(time.Hour, nil)
	c, _ := j.Mint(t0, src, binding)
	b.ReportAllocs()
	for b.Loop() {
		if j.Verify(t0, src, binding, c[:]) != Valid {
			b.Fatal("invalid")
		}
	}
}

// FuzzVerify: Verify never panics and accepts only the cookie the jar minted
// for this source and binding (a forger cannot guess a 128-bit MAC).
func FuzzVerify(f *testing.F) {
	j := NewJar(time.Hour, nil)
	c, _ := j.Mint(t0, src, binding)
	f.Add(c[:])
	f.Add(c[:Size-1])
	f.Add(append(c[:], 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if j.Verify(t0, src, binding, b) == Valid && !bytes.Equal(b, c[:]) {
			t.Fatalf("a forged cookie %x verified", b)
		}
	})
}
