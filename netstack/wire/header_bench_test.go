package wire

import "testing"

// BenchmarkHeaderCodec encodes and decodes one ReliableOrdered packet header
// with a 300-byte payload into a reused buffer.
func BenchmarkHeaderCodec(b *testing.B) {
	payload := make([]byte, 300)
	buf := make([]byte, 0, OrderedHeaderSize+len(payload))
	h := Header{Type: 7, Channel: ReliableOrdered, SenderID: 7, Sequence: 42, Timestamp: 1.5, OrderedSequence: 9}
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendPacket(buf[:0], &h, payload)
		got, p, err := ParsePacket(buf)
		if err != nil || got.Sequence != 42 || len(p) != 300 {
			b.Fatal("round trip failed")
		}
		h.Sequence = got.Sequence
	}
}

func TestHeaderCodecAllocs(t *testing.T) {
	payload := make([]byte, 300)
	buf := make([]byte, 0, OrderedHeaderSize+len(payload))
	h := Header{Type: 7, Channel: ReliableOrdered, Sequence: 1, OrderedSequence: 1}
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendPacket(buf[:0], &h, payload)
		_, _, _ = ParsePacket(buf)
	}); n != 0 {
		t.Fatalf("header codec allocates %v times per packet", n)
	}
}
