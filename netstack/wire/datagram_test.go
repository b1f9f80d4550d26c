package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestUvarint(t *testing.T) {
	for _, v := range []uint32{0, 1, 127, 128, 300, 1<<14 - 1, 1 << 14, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, 1<<32 - 1} {
		b := AppendUvarint(nil, v)
		if len(b) != UvarintLen(v) {
			t.Errorf("%d: %d bytes, UvarintLen %d", v, len(b), UvarintLen(v))
		}
		got, next, ok := readUvarint(b, 0)
		if !ok || got != v || next != len(b) {
			t.Errorf("%d: read %d, %d, %v", v, got, next, ok)
		}
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"truncated", []byte{0x80}},
		{"overlong zero", []byte{0x80, 0x00}},
		{"overlong one", []byte{0x81, 0x00}},
		{"above 2^32-1", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x10}},
		{"six bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}},
	} {
		if _, _, ok := readUvarint(tc.b, 0); ok {
			t.Errorf("%s (% x) accepted", tc.name, tc.b)
		}
	}
}

// records is a datagram's worth of every record shape.
func sampleRecords() []struct {
	h       Header
	payload []byte
} {
	return []struct {
		h       Header
		payload []byte
	}{
		{Header{Type: TypeAck, Channel: Unreliable}, AppendAck(nil, &Ack{Ack: 7, Bits: 3, DelayMS: 2})},
		{Header{Type: 9, Channel: Unreliable}, bytes.Repeat([]byte{0xAB}, 36)},
		{Header{Type: 13, Channel: Reliable, Sequence: 300}, []byte("chat")},
		{Header{Type: 1122, Channel: ReliableOrdered, Sequence: 301, OrderedSequence: 90}, []byte{1, 2, 3}},
		{Header{Type: 14, Channel: ReliableOrdered, Sequence: 1 << 21, OrderedSequence: 1, FragIndex: 2, FragCount: 5}, bytes.Repeat([]byte{7}, 200)},
		{Header{Type: 1000, Channel: Reliable, Sequence: 5, FragIndex: 4, FragCount: 5}, []byte{9}},
	}
}

func TestDatagramRoundTrip(t *testing.T) {
	const base = 41
	b := AppendDatagramBase(nil, base)
	for _, r := range sampleRecords() {
		before := len(b)
		b = AppendRecord(b, &r.h, r.payload)
		if got, want := len(b)-before, RecordHeaderSize(&r.h, len(r.payload))+len(r.payload); got != want {
			t.Errorf("%v record: %d bytes, RecordHeaderSize says %d", r.h.Type, got, want)
		}
	}
	n, err := CheckDatagram(b)
	if err != nil || n != len(sampleRecords()) {
		t.Fatalf("CheckDatagram = %d, %v", n, err)
	}
	rd := NewDatagramReader(b)
	unrel := uint32(base)
	for i, want := range sampleRecords() {
		var h Header
		p, ok := rd.Next(&h)
		if !ok {
			t.Fatalf("record %d missing", i)
		}
		wh := want.h
		if wh.Channel == Unreliable {
			wh.Sequence = unrel
			unrel++
		}
		if h != wh || !bytes.Equal(p, want.payload) {
			t.Fatalf("record %d: %+v % x, want %+v % x", i, h, p, wh, want.payload)
		}
	}
	var h Header
	if _, ok := rd.Next(&h); ok {
		t.Fatal("a record after the last")
	}
}

func TestCheckDatagramRefuses(t *testing.T) {
	rec := func(h Header, p []byte) []byte { return AppendRecord(AppendDatagramBase(nil, 1), &h, p) }
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty body", nil},
		{"channel 3", []byte{1, 0x03, 5, 0}},
		{"reserved flag", []byte{1, 0x08, 5, 0}},
		{"type 0", []byte{1, 0x00, 0, 0}},
		{"type above 65535", []byte{1, 0x00, 0x80, 0x80, 0x04, 0}},
		{"truncated type", []byte{1, 0x00, 0x80}},
		{"reliable sequence 0", rec(Header{Type: 13, Channel: Reliable}, []byte("x"))},
		{"ordered sequence 0", rec(Header{Type: 14, Channel: ReliableOrdered, Sequence: 1}, []byte("x"))},
		{"unreliable fragment", []byte{1, 0x04, 9, 0, 2, 1, 'x'}},
		{"frag_count 1", rec(Header{Type: 13, Channel: Reliable, Sequence: 3, FragCount: 1}, []byte("x"))},
		{"frag_count 65", rec(Header{Type: 13, Channel: Reliable, Sequence: 3, FragCount: 65}, []byte("x"))},
		{"frag_index not below count", rec(Header{Type: 13, Channel: Reliable, Sequence: 9, FragIndex: 3, FragCount: 3}, []byte("x"))},
		{"sequence not above frag_index", rec(Header{Type: 13, Channel: Reliable, Sequence: 2, FragIndex: 2, FragCount: 3}, []byte("x"))},
		{"empty fragment", rec(Header{Type: 13, Channel: Reliable, Sequence: 3, FragIndex: 1, FragCount: 3}, nil)},
		{"length beyond the datagram", []byte{1, 0x00, 9, 5, 1, 2}},
		{"length above MAX_PAYLOAD", append([]byte{1, 0x00, 9}, AppendUvarint(nil, MaxPayload+1)...)},
		{"unreliable with base 0", AppendRecord(AppendDatagramBase(nil, 0), &Header{Type: 5, Channel: Unreliable}, make([]byte, 8))},
		{"unreliable past 2^32-1", AppendRecord(AppendRecord(AppendDatagramBase(nil, 1<<32-1), &Header{Type: 5}, make([]byte, 8)), &Header{Type: 5}, make([]byte, 8))},
	} {
		if _, err := CheckDatagram(tc.b); !errors.Is(err, ErrMalformedDatagram) {
			t.Errorf("%s (% x): %v, want ErrMalformedDatagram", tc.name, tc.b, err)
		}
	}
	// A body with no record is valid (a base alone); so is a reliable-only
	// datagram with base 0.
	for _, b := range [][]byte{{1}, {0}, rec(Header{Type: 13, Channel: Reliable, Sequence: 1}, []byte("x"))} {
		if _, err := CheckDatagram(b); err != nil {
			t.Errorf("% x: %v", b, err)
		}
	}
}

func TestSizeLimits(t *testing.T) {
	const d = DefaultDatagramSize
	if got := MaxFragmentPayload(d); got != 1149 {
		t.Errorf("MaxFragmentPayload(1200) = %d, want 1149", got)
	}
	if n := (MaxPayload + MaxFragmentPayload(d) - 1) / MaxFragmentPayload(d); n > MaxFragments {
		t.Errorf("a MAX_PAYLOAD message needs %d fragments at 1200 bytes, above %d", n, MaxFragments)
	}
	for _, typ := range []MessageType{9, 1000, 60000} {
		n := MaxUnreliablePayload(d, typ)
		h := Header{Type: typ}
		if total := SealOverhead + MaxBodyHeader + RecordHeaderSize(&h, n) + n; total > d {
			t.Errorf("type %d: %d bytes of payload make a %d-byte datagram", typ, n, total)
		}
		if total := SealOverhead + MaxBodyHeader + RecordHeaderSize(&h, n+1) + n + 1; total <= d {
			t.Errorf("type %d: %d bytes is not the largest that fits", typ, n)
		}
	}
	if MaxUnreliablePayload(MaxDatagram, 9) != MaxPayload {
		t.Error("the largest datagram carries MAX_PAYLOAD unreliably")
	}
}

func TestNoAllocations(t *testing.T) {
	b := AppendDatagramBase(make([]byte, 0, 2048), 1)
	for _, r := range sampleRecords() {
		b = AppendRecord(b, &r.h, r.payload)
	}
	var h Header
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := CheckDatagram(b); err != nil {
			panic(err)
		}
		rd := NewDatagramReader(b)
		for _, ok := rd.Next(&h); ok; _, ok = rd.Next(&h) {
		}
		out := AppendDatagramBase(b[len(b):len(b)], 1)
		_ = AppendRecord(out, &h, b[:10])
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per datagram, want 0", allocs)
	}
}

func TestMessageRefused(t *testing.T) {
	m := MessageRefused{Type: 1500, Channel: ReliableOrdered, Reason: RefusedMalformed, Sequence: 77, Suppressed: 3}
	p := AppendMessageRefused(nil, &m)
	if len(p) != MessageRefusedSize {
		t.Fatalf("%d bytes", len(p))
	}
	got, err := ParseMessageRefused(p)
	if err != nil || got != m {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	p[2] = 3
	if _, err := ParseMessageRefused(p); err == nil {
		t.Error("channel 3 accepted")
	}
	if _, err := ParseMessageRefused(p[:11]); err == nil {
		t.Error("11 bytes accepted")
	}
	if RefusalReason(99).String() != "RefusalReason(99)" || RefusedNotLoaded.String() != "NotLoaded" {
		t.Error("reason names")
	}
}

func TestModuleSchemas(t *testing.T) {
	reg := NewRegistry()
	for _, s := range []Schema{
		{ID: 1301, Name: "Hit", Direction: ServerToClient, Channel: ReliableOrdered, MinLen: 12, MaxLen: 12, StringFieldOffset: NoStringFields, RequiresAdmitted: true},
		{ID: 1000, Name: "Shout", Direction: ClientToServer, Channel: Reliable, MinLen: 3, MaxLen: 202, StringFieldOffset: 0},
	} {
		if err := reg.Register("m", s); err != nil {
			t.Fatal(err)
		}
	}
	m := ModuleSchemas{Revision: reg.Revision(), Types: reg.ModuleSchemas()}
	if m.Revision != 2 || len(m.Types) != 2 || m.Types[0].ID != 1000 || m.Types[1].Owner != "m" {
		t.Fatalf("%+v", m)
	}
	p := AppendModuleSchemas(nil, &m)
	got, err := ParseModuleSchemas(p)
	if err != nil || got.Revision != m.Revision || len(got.Types) != 2 || !reflect.DeepEqual(got.Types, m.Types) {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	bad := func(name string, mod func(*ModuleSchemas)) {
		c := ModuleSchemas{Revision: 1, Types: append([]ModuleSchema(nil), m.Types...)}
		mod(&c)
		if _, err := ParseModuleSchemas(AppendModuleSchemas(nil, &c)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	bad("descending ids", func(c *ModuleSchemas) { c.Types[0], c.Types[1] = c.Types[1], c.Types[0] })
	bad("repeated id", func(c *ModuleSchemas) { c.Types[1].ID = c.Types[0].ID })
	bad("built-in id", func(c *ModuleSchemas) { c.Types[0].ID = 13 })
	bad("min above max", func(c *ModuleSchemas) { c.Types[0].MinLen = 500 })
	bad("empty name", func(c *ModuleSchemas) { c.Types[0].Name = "" })
	bad("control character in owner", func(c *ModuleSchemas) { c.Types[0].Owner = "a\nb" })
	bad("channel 3", func(c *ModuleSchemas) { c.Types[0].Channel = 3 })
	if _, err := ParseModuleSchemas(append(p, 0)); err == nil {
		t.Error("trailing byte accepted")
	}
	huge := []byte{0, 0, 0, 0, 0xFF, 0xFF}
	if err := CheckModuleSchemas(huge); err == nil {
		t.Error("a count the payload cannot hold accepted")
	}

	// Unregistering keeps the ids as not loaded: Validate says so, the
	// announcement leaves them out, the revision moves.
	reg.UnregisterOwner("m")
	if reg.Revision() != 3 || len(reg.ModuleSchemas()) != 0 {
		t.Fatalf("after unregister: revision %d, %d types", reg.Revision(), len(reg.ModuleSchemas()))
	}
	h := Header{Type: 1000, Channel: Reliable}
	if err := reg.Validate(ClientToServer, &h, []byte{1, 0, 'x'}); err != ErrTypeNotLoaded {
		t.Fatalf("Validate of an unloaded module's type: %v", err)
	}
	if _, _, ok := reg.Lookup(1000); ok {
		t.Error("Lookup finds an unloaded type")
	}
	if err := reg.Register("other", Schema{ID: 1000, Name: "Reuse", Direction: ClientToServer, Channel: Reliable, MaxLen: 10, StringFieldOffset: NoStringFields}); err != nil {
		t.Fatalf("an unloaded id is free again: %v", err)
	}
}
