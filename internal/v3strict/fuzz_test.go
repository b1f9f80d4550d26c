package v3strict

import (
	"testing"
	"time"
)

// FuzzParsePacket: the packet parser never panics and what it accepts
// encodes back to the same bytes.
func FuzzParsePacket(f *testing.F) {
	f.Add(AppendPacket(nil, Header{Type: 5, Sequence: 1}, make([]byte, 8)))
	f.Add(AppendPacket(nil, Header{Type: 8, Channel: ReliableOrdered, Sequence: 5, Ordered: 2}, []byte{42, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, err := ParsePacket(b)
		if err != nil {
			return
		}
		if got := AppendPacket(nil, h, p); string(got) != string(b) {
			t.Fatalf("round trip %x → %x", b, got)
		}
	})
}

// FuzzCheck: the table and payload checks never panic on any type,
// channel and payload, either way.
func FuzzCheck(f *testing.F) {
	tab, err := NewTable([]Rule{{ID: 1303, Name: "Map", Dir: ToClient, Channel: ReliableOrdered, Min: 3, Max: 66, StringOffset: 0}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint16(TypeGameStateSync), uint8(ReliableOrdered), false, gss(7))
	f.Add(uint16(TypeChatMessage), uint8(Reliable), true, []byte{0, 0, 2, 0, 'h', 'i'})
	f.Add(uint16(TypeMatchStart), uint8(ReliableOrdered), false, []byte{1, 0, 'm', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(uint16(1303), uint8(ReliableOrdered), false, []byte{1, 0, 'm'})
	f.Fuzz(func(t *testing.T, typ uint16, ch uint8, toServer bool, p []byte) {
		dir := ToClient
		if toServer {
			dir = ToServer
		}
		_ = tab.Check(dir, Header{Type: typ, Channel: Channel(ch % 3)}, p)
		_, _ = ParseGameStateSync(p)
		if g, err := ParseGameStateSync(gss(7)); err == nil && len(p) >= 12 {
			if _, e, err := checkSpawn(g.Types, p); err == nil {
				_ = checkUpdate(e, p)
			}
		}
	})
}

// FuzzOpen: the sealed-frame opener never panics and never accepts a
// frame that was not sealed with its key.
func FuzzOpen(f *testing.F) {
	var key [32]byte
	f.Add(newSealer(key).seal([]byte("packet")))
	f.Fuzz(func(t *testing.T, d []byte) {
		o := newOpener([32]byte{1})
		if _, err := o.open(d, time.Unix(0, 0)); err == nil {
			t.Fatalf("a frame under another key opened: %x", d)
		}
	})
}
