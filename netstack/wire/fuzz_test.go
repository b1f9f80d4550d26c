package wire

import (
	"bytes"
	"errors"
	"testing"
)

// Fuzz targets. Their seed corpora live in testdata/fuzz/FuzzXxx; the f.Add
// seeds below keep each target useful even without them. Properties: nothing
// panics, a successful parse re-encodes to the same bytes (every encoding here
// is canonical: bools are 0/1, floats keep their bits, counts are derived), and
// Registry.Validate agrees with the parsers.

func FuzzParsePacket(f *testing.F) {
	for _, s := range builtinSamples() {
		f.Add(AppendPacket(nil, &Header{Type: s.typ, Channel: s.ch, SenderID: 7, Sequence: 9, Timestamp: 1.5, OrderedSequence: 4}, s.payload))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, payload, err := ParsePacket(b)
		if err != nil {
			return
		}
		if out := AppendPacket(nil, &h, payload); !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs:\n in % x\nout % x", b, out)
		}
	})
}

// Reader operations driven by FuzzReader's ops bytes.
const (
	opU8 = iota
	opBool
	opU16
	opU32
	opU64
	opI32
	opF32
	opFiniteF32
	opVec3
	opStr
	opBytes
	opCount
)

func FuzzReader(f *testing.F) {
	f.Add([]byte{opU32, opStr, opU8}, enc(uint32(1), "hello", uint8(2)))
	f.Add([]byte{opBool, opFiniteF32, opVec3, opBytes | 3<<4}, enc(uint8(1), float32(2), Vec3{1, 2, 3}, []byte{4, 5, 6}))
	f.Add([]byte{opStr, opStr}, enc(uint16(40), "x"))
	f.Fuzz(func(t *testing.T, ops, data []byte) {
		r := NewReader(data)
		var w Writer // mirrors every successful read
		for _, op := range ops {
			before, failed := r.Offset(), r.HasError()
			switch (op & 0x0F) % opCount {
			case opU8:
				w.U8(r.U8())
			case opBool:
				w.Bool(r.Bool())
			case opU16:
				w.U16(r.U16())
			case opU32:
				w.U32(r.U32())
			case opU64:
				w.U64(r.U64())
			case opI32:
				w.I32(r.I32())
			case opF32:
				w.F32(r.F32())
			case opFiniteF32:
				w.F32(r.FiniteF32())
			case opVec3:
				w.Vec3(r.Vec3())
			case opStr:
				s := r.StrBytes()
				if len(s) != cap(s) {
					t.Fatalf("StrBytes result can be appended into the input")
				}
				w.StrBytes(s)
			case opBytes:
				p := r.Bytes(int(op >> 4))
				if !r.HasError() && len(p) != int(op>>4) {
					t.Fatalf("Bytes(%d) returned %d bytes", op>>4, len(p))
				}
				w.Raw(p)
			}
			if failed && (r.Offset() != before || !r.HasError()) {
				t.Fatalf("a latched error did not stop the reader")
			}
			if r.Offset() > len(data) || r.Remaining() != len(data)-r.Offset() {
				t.Fatalf("offset %d, remaining %d, len %d", r.Offset(), r.Remaining(), len(data))
			}
		}
		if r.HasError() {
			if r.Finish() == nil {
				t.Fatalf("Finish hides the latched error")
			}
			return
		}
		if got := w.Bytes(); !bytes.Equal(got, data[:r.Offset()]) {
			t.Fatalf("values read re-encode to % x, consumed % x", got, data[:r.Offset()])
		}
		if (r.Finish() == nil) != (r.Remaining() == 0) {
			t.Fatalf("Finish disagrees with Remaining")
		}
	})
}

func FuzzAck(f *testing.F) {
	f.Add(enc(uint32(100), uint32(0x80000005), uint16(12)), uint32(68))
	f.Add(enc(uint32(1), uint32(0xFFFFFFFF), uint16(0)), uint32(0))
	f.Add(enc(uint32(0xFFFFFFFF), uint32(1), uint16(0)), uint32(0xFFFFFFFE))
	f.Fuzz(func(t *testing.T, p []byte, seq uint32) {
		a, err := ParseAck(p)
		if err != nil {
			if len(p) == 10 {
				t.Fatalf("10-byte Ack refused: %v", err)
			}
			return
		}
		if !bytes.Equal(AppendAck(nil, &a), p) {
			t.Fatalf("Ack re-encoding differs")
		}
		// Reference in 64-bit arithmetic, straight from §7's sentence.
		want := seq == a.Ack
		for i := uint64(0); i < 32; i++ {
			if a.Bits>>i&1 == 1 && int64(a.Ack)-1-int64(i) == int64(seq) {
				want = true
			}
		}
		if got := a.Acknowledges(seq); got != want {
			t.Fatalf("Ack%+v.Acknowledges(%d) = %v, want %v", a, seq, got, want)
		}
	})
}

var errNoParser = errors.New("no parser for this type")

// reencode returns the encoding of a parsed message, or the parse error.
func reencode[T any](m T, err error, encode func([]byte, *T) []byte) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return encode(nil, &m), nil
}

// parseBuiltin runs the full parser of built-in type t and re-encodes the result.
func parseBuiltin(t MessageType, p []byte) ([]byte, error) {
	switch t {
	case TypeConnect:
		m, err := ParseClientFinished(p)
		return reencode(m, err, AppendClientFinished)
	case TypeConnectRejected:
		m, err := ParseConnectRejected(p)
		return reencode(m, err, AppendConnectRejected)
	case TypeDisconnect:
		m, err := ParseDisconnect(p)
		return reencode(m, err, AppendDisconnect)
	case TypeHeartbeat:
		m, err := ParseHeartbeat(p)
		return reencode(m, err, AppendHeartbeat)
	case TypeAck:
		m, err := ParseAck(p)
		return reencode(m, err, AppendAck)
	}
	return nil, errNoParser
}

// FuzzParsePayload covers the parser of every transport payload: typ
// selects the message type (modulo 19; the game types of sim/gamemsg have
// their own target there).
func FuzzParsePayload(f *testing.F) {
	for _, s := range builtinSamples() {
		f.Add(uint8(s.typ), s.travel == ClientToServer, s.payload)
	}
	f.Add(uint8(TypeConnectRejected), false, AppendConnectRejected(nil, &ConnectRejected{Reason: 6, ServerVersion: 3, Detail: "full"}))
	f.Fuzz(func(t *testing.T, typ uint8, _ bool, p []byte) { // the bool is kept for the seed corpus
		mt := MessageType(typ % 19)
		out, err := parseBuiltin(mt, p)
		if err != nil {
			if err != errNoParser && err != ErrNameInvalid && !errors.Is(err, ErrMalformedPayload) {
				t.Fatalf("%v: error %v matches neither ErrMalformedPayload nor ErrNameInvalid", mt, err)
			}
			return
		}
		if !bytes.Equal(out, p) {
			t.Fatalf("%v re-encoding differs:\n in % x\nout % x", mt, p, out)
		}
	})
}

// FuzzValidate runs Registry.Validate over every transport type and two module
// types, and checks it against the full parsers: a payload Validate accepts
// parses, and one it calls malformed does not.
func FuzzValidate(f *testing.F) {
	for _, s := range builtinSamples() {
		f.Add(uint16(s.typ), uint8(s.ch), uint8(s.travel), s.payload)
	}
	f.Add(uint16(1000), uint8(Reliable), uint8(ClientToServer), enc(uint32(1), "hi"))
	f.Add(uint16(1001), uint8(Unreliable), uint8(ServerToClient), []byte{1, 2})
	r := NewRegistry()
	if err := r.Register("emotes", userSchema(1000)); err != nil {
		f.Fatal(err)
	}
	opaque := Schema{ID: 1001, Name: "Blob", Direction: BothDirections, Channel: Unreliable, MaxLen: 64, StringFieldOffset: NoStringFields}
	if err := r.Register("blobs", opaque); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, typ uint16, ch, travel uint8, p []byte) {
		h := Header{Type: MessageType(typ), Channel: Channel(ch % 4)}
		dir := Direction(travel % 4)
		err := r.Validate(dir, &h, p)
		if h.Type == 0 || h.Type > TypeAck || h.Type == TypeConnectAccepted || h.Type == TypeConnectRejected {
			return
		}
		if err != nil && !errors.Is(err, ErrMalformedPayload) {
			return // refused by the table before the payload was looked at
		}
		_, perr := parseBuiltin(h.Type, p)
		parsed := perr == nil || (h.Type == TypeConnect && perr == ErrNameInvalid)
		if (err == nil) != parsed {
			t.Fatalf("%v: Validate = %v but the parser says %v", h.Type, err, perr)
		}
	})
}

// FuzzCheckDatagram: the packed datagram parser never panics; a body it
// accepts yields exactly the records it counted, and re-encodes to the same
// bytes (every uvarint is in its shortest form, so the encoding is canonical).
func FuzzCheckDatagram(f *testing.F) {
	b := AppendDatagramBase(nil, 41)
	for _, r := range sampleRecords() {
		b = AppendRecord(b, &r.h, r.payload)
		f.Add(bytes.Clone(b))
	}
	f.Add([]byte{1, 0x04, 9, 0, 2, 1, 'x'})
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := CheckDatagram(body)
		rd := NewDatagramReader(body)
		var h Header
		got := 0
		base, _, _ := readUvarint(body, 0)
		out := AppendDatagramBase(nil, base)
		for p, ok := rd.Next(&h); ok; p, ok = rd.Next(&h) {
			if err == nil {
				out = AppendRecord(out, &h, p)
			}
			got++
		}
		if err != nil {
			return
		}
		if got != n {
			t.Fatalf("CheckDatagram counted %d records, the reader found %d", n, got)
		}
		if !bytes.Equal(out, body) {
			t.Fatalf("re-encoding differs:\n in % x\nout % x", body, out)
		}
	})
}

// FuzzModuleSchemas: an announcement that parses re-encodes to the same
// bytes, and every entry it holds registers in a fresh registry.
func FuzzModuleSchemas(f *testing.F) {
	f.Add(AppendModuleSchemas(nil, &ModuleSchemas{Revision: 3, Types: []ModuleSchema{
		{Schema: Schema{ID: 1000, Name: "Shout", Direction: ClientToServer, Channel: Reliable, MinLen: 3, MaxLen: 202, StringFieldOffset: 0}, Owner: "greeter"},
		{Schema: Schema{ID: 1001, Name: "Shouted", Direction: ServerToClient, Channel: Reliable, MinLen: 2, MaxLen: 302, StringFieldOffset: 0, RequiresAdmitted: true}, Owner: "greeter"},
	}}))
	f.Add(AppendModuleSchemas(nil, &ModuleSchemas{Revision: 4, Types: []ModuleSchema{
		{Schema: Schema{ID: 1000, Name: "hello_greet", Direction: ClientToServer, Channel: Reliable, MinLen: 2, MaxLen: 34, StringFieldOffset: 0, RequiresAdmitted: true,
			Fields: []Field{{Name: "name", Kind: KindStr, Max: 32}}}, Owner: "hello"},
		{Schema: Schema{ID: 1001, Name: "rich", Direction: BothDirections, Channel: Reliable, MinLen: 35, MaxLen: 96, StringFieldOffset: 27,
			Fields: richFields}, Owner: "hello"},
	}}))
	f.Add([]byte{0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := ParseModuleSchemas(p)
		if (err == nil) != (CheckModuleSchemas(p) == nil) {
			t.Fatalf("Parse and Check disagree: %v", err)
		}
		if err != nil {
			return
		}
		if out := AppendModuleSchemas(nil, &m); !bytes.Equal(out, p) {
			t.Fatalf("re-encoding differs:\n in % x\nout % x", p, out)
		}
		reg := NewRegistry()
		for _, s := range m.Types {
			if err := reg.Register(s.Owner, s.Schema); err != nil {
				t.Fatalf("announced entry does not register: %v", err)
			}
		}
	})
}

// FuzzModuleProtocols: whatever parses re-encodes to the same bytes, and
// every entry obeys the rules (a valid name, names ascending, 1 ≤ oldest ≤
// protocol).
func FuzzModuleProtocols(f *testing.F) {
	f.Add(AppendModuleProtocols(nil, &ModuleProtocols{Revision: 7, Modules: []ModuleProtocol{
		{Module: "deathmatch", Protocol: 1, Oldest: 1}, {Module: "mmo", Protocol: 2, Oldest: 1}}}))
	f.Add([]byte{0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 1, 0, 3, 0, 'm', 'm', 'o', 0, 0, 1, 0}) // protocol 0
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := ParseModuleProtocols(p)
		if err != nil {
			return
		}
		if out := AppendModuleProtocols(nil, &m); !bytes.Equal(out, p) {
			t.Fatalf("re-encoding differs:\n in % x\nout % x", p, out)
		}
		for i, e := range m.Modules {
			if CheckProtocol(e) != nil || !ValidName([]byte(e.Module), MaxSchemaNameLen) || i > 0 && m.Modules[i-1].Module >= e.Module {
				t.Fatalf("entry %d breaks the rules: %+v", i, e)
			}
			if got, ok := m.Lookup(e.Module); !ok || got != e {
				t.Fatalf("Lookup(%q) = %+v, %v", e.Module, got, ok)
			}
		}
	})
}
