package handshake_test

import (
	"bytes"
	"crypto/ecdh"
	"encoding/binary"
	"errors"
	"math/big"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/handshake"
)

func TestCheckClientHelloOrder(t *testing.T) {
	v := loadVectors(t)
	valid := []byte(v.ClientHello)
	with := func(mut func(b []byte) []byte) []byte {
		return mut(bytes.Clone(valid))
	}
	setVersion := func(ver uint16) func(b []byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint16(b[4:], ver); return b }
	}
	setSuite := func(s uint8) func(b []byte) []byte {
		return func(b []byte) []byte { b[6] = s; return b }
	}
	smallKey := func(b []byte) []byte { clear(b[7:39]); return b }
	cases := []struct {
		name    string
		payload []byte
		want    handshake.RejectReason
	}{
		{"valid", valid, handshake.RejectNone},
		{"empty", nil, handshake.RejectProtocolMissing},
		{"magic only", valid[:4], handshake.RejectProtocolMissing},
		{"magic and one version byte", valid[:5], handshake.RejectProtocolMissing},
		{"bad magic", with(func(b []byte) []byte { b[0] ^= 1; return b }), handshake.RejectProtocolMissing},
		{"legacy packet magic", with(func(b []byte) []byte { copy(b, "KRPS"); return b }), handshake.RejectProtocolMissing},
		{"magic and version only", valid[:6], handshake.RejectMalformedHandshake},
		{"version 2", with(setVersion(2)), handshake.RejectProtocolTooOld},
		{"version 0", with(setVersion(0)), handshake.RejectProtocolTooOld},
		{"version 4", with(setVersion(4)), handshake.RejectProtocolTooNew},
		{"version 65535", with(setVersion(0xffff)), handshake.RejectProtocolTooNew},
		{"version 2 truncated", with(setVersion(2))[:6], handshake.RejectProtocolTooOld},
		{"version 4 longer", append(with(setVersion(4)), make([]byte, 40)...), handshake.RejectProtocolTooNew},
		{"version 4 bad suite", with(func(b []byte) []byte { return setSuite(9)(setVersion(4)(b)) }), handshake.RejectProtocolTooNew},
		{"suite 0", with(setSuite(0)), handshake.RejectUnsupportedSuite},
		{"suite 2", with(setSuite(2)), handshake.RejectUnsupportedSuite},
		{"suite 2 and 56 bytes", append(with(setSuite(2)), 0), handshake.RejectMalformedHandshake},
		{"suite 2 and small-order key", with(func(b []byte) []byte { return smallKey(setSuite(2)(b)) }), handshake.RejectUnsupportedSuite},
		{"small-order key", with(smallKey), handshake.RejectMalformedHandshake},
		{"small-order key and 54 bytes", with(smallKey)[:54], handshake.RejectMalformedHandshake},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, got := handshake.CheckClientHello(c.payload); got != c.want {
				t.Fatalf("reason %d, want %d", got, c.want)
			}
		})
	}
	t.Run("every truncation and extension", func(t *testing.T) {
		for n := 0; n <= 2*handshake.ClientHelloSize; n++ {
			p := make([]byte, n)
			copy(p, valid)
			want := handshake.RejectMalformedHandshake
			switch {
			case n < 6:
				want = handshake.RejectProtocolMissing
			case n == handshake.ClientHelloSize:
				want = handshake.RejectNone
			}
			if _, got := handshake.CheckClientHello(p); got != want {
				t.Errorf("length %d: reason %d, want %d", n, got, want)
			}
			// A future version is TooNew at every length it can be read at.
			if n >= 6 {
				binary.LittleEndian.PutUint16(p[4:], 4)
				if _, got := handshake.CheckClientHello(p); got != handshake.RejectProtocolTooNew {
					t.Errorf("v4 length %d: reason %d, want TooNew", n, got)
				}
			}
		}
	})
	t.Run("parsed fields", func(t *testing.T) {
		h, _ := handshake.CheckClientHello(valid)
		if h.Version != 3 || h.Suite != 1 || !bytes.Equal(h.EphemeralPub[:], v.ClientPub) || !bytes.Equal(h.Nonce[:], v.Inputs.ClientNonce) {
			t.Fatalf("parsed %+v", h)
		}
	})
	t.Run("no allocation", func(t *testing.T) {
		if n := testing.AllocsPerRun(100, func() { handshake.CheckClientHello(valid) }); n != 0 {
			t.Fatalf("%v allocs", n)
		}
	})
}

// TestSmallOrderList checks the hard-coded list against its definition: the
// values libsodium documents, and X25519 giving the all-zero secret for each.
func TestSmallOrderList(t *testing.T) {
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	dec := func(s string) *big.Int { n, _ := new(big.Int).SetString(s, 10); return n }
	want := []*big.Int{
		big.NewInt(0), big.NewInt(1),
		dec("325606250916557431795983626356110631294008115727848805560023387167927233504"),
		dec("39382357235489614581723060781553021112529911719440698176882885853963445705823"),
		new(big.Int).Sub(p, big.NewInt(1)), p, new(big.Int).Add(p, big.NewInt(1)),
	}
	priv, _ := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{0x5a}, 32))
	for i, pt := range handshake.SmallOrderPoints {
		var le [32]byte
		be := want[i].FillBytes(make([]byte, 32))
		for j := range le {
			le[j] = be[31-j]
		}
		if le != pt {
			t.Errorf("entry %d is %x, want %x", i, pt, le)
		}
		for _, high := range []bool{false, true} {
			k := pt
			if high {
				k[31] |= 0x80
			}
			if !handshake.IsSmallOrder(&k) {
				t.Errorf("entry %d (bit 255 %v) not detected", i, high)
			}
			pub, _ := ecdh.X25519().NewPublicKey(k[:])
			if _, err := priv.ECDH(pub); err == nil {
				t.Errorf("entry %d (bit 255 %v): X25519 output is not all zero", i, high)
			}
			var ss [32]byte
			if handshake.SharedSecret(&ss, priv, pub) {
				t.Errorf("entry %d (bit 255 %v): sharedSecret accepted it", i, high)
			}
		}
	}
	var ordinary [32]byte
	copy(ordinary[:], priv.PublicKey().Bytes())
	if handshake.IsSmallOrder(&ordinary) {
		t.Error("an ordinary public key was flagged")
	}
}

// TestSmallOrderRefused: every small-order client key, with and without bit
// 255, is MalformedHandshake — from CheckClientHello, and from Accept as well
// for a caller that skipped the check (no signature is made).
func TestSmallOrderRefused(t *testing.T) {
	f := newFixture(t)
	for i, pt := range handshake.SmallOrderPoints {
		for _, high := range []byte{0, 0x80} {
			p := bytes.Clone(f.v.ClientHello)
			copy(p[7:39], pt[:])
			p[38] |= high
			h, reason := handshake.CheckClientHello(p)
			if reason != handshake.RejectMalformedHandshake {
				t.Errorf("point %d high %#x: reason %d, want MalformedHandshake", i, high, reason)
			}
			_, err := handshake.Accept(f.id, p, h, 9, 0, nil)
			var re *handshake.RejectError
			if !errors.As(err, &re) || re.Reason != handshake.RejectMalformedHandshake {
				t.Errorf("point %d high %#x: Accept error %v, want MalformedHandshake", i, high, err)
			}
		}
	}
}
