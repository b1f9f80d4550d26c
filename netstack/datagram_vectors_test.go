package netstack_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// The vectors of the v4 data plane (docs/protocol.md §5),
// testdata/vectors-v4-datagram.json: datagram bodies with every kind of
// record, their sealed frames under the session keys of vectors-v4.json, a
// fragmented message, the v4 ClientFinished frame, and the MessageRefused
// and ModuleSchemas payloads. The test rebuilds each from the codecs and
// parses each back.

type hexString []byte

func (h *hexString) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := hex.DecodeString(s)
	*h = v
	return err
}

func (h hexString) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }

type datagramVectors struct {
	Description    string         `json:"description"`
	KeyS2C         hexString      `json:"k_s2c_0"`
	KeyC2S         hexString      `json:"k_c2s_0"`
	ServerRecords  []vectorRecord `json:"server_records"`
	ServerBase     uint32         `json:"server_unreliable_base"`
	ServerBody     hexString      `json:"server_datagram_body"`
	ServerSeq      uint64         `json:"server_frame_sequence"`
	ServerFrame    hexString      `json:"server_sealed_datagram"`
	FinishedBody   hexString      `json:"client_finished_body"`
	FinishedFrame  hexString      `json:"client_finished_sealed_datagram"`
	Fragmented     hexString      `json:"fragmented_payload"`
	FragmentBodies []hexString    `json:"fragment_bodies"`
	Refused        hexString      `json:"message_refused_payload"`
	Schemas        hexString      `json:"module_schemas_payload"`
	// SchemasTyped is an announcement with typed entries (§10.2, flags
	// bit 1): every field kind, arrays of a fixed and of a sized kind.
	SchemasTyped hexString `json:"module_schemas_typed_payload"`
}

type vectorRecord struct {
	Type            uint16    `json:"type"`
	Channel         uint8     `json:"channel"`
	Sequence        uint32    `json:"sequence"`
	OrderedSequence uint32    `json:"ordered_sequence,omitempty"`
	FragIndex       uint8     `json:"frag_index,omitempty"`
	FragCount       uint8     `json:"frag_count,omitempty"`
	Payload         hexString `json:"payload"`
	Encoded         hexString `json:"encoded"`
}

// buildDatagramVectors computes every vector from the codecs.
func buildDatagramVectors(t *testing.T, keyS2C, keyC2S []byte) datagramVectors {
	t.Helper()
	v := datagramVectors{
		Description: "protocol v4 data plane (docs/protocol.md §5): packed datagram bodies, sealed with the keys of vectors-v4.json (frame sequence as given, epoch 0), a message fragmented for 1200-byte datagrams, the v4 ClientFinished frame, MessageRefused and ModuleSchemas payloads",
		KeyS2C:      keyS2C, KeyC2S: keyC2S, ServerBase: 17, ServerSeq: 3,
	}
	refused := wire.AppendMessageRefused(nil, &wire.MessageRefused{Type: 1000, Channel: wire.Reliable, Reason: wire.RefusedMalformed, Sequence: 4, Suppressed: 0})
	schemas := wire.AppendModuleSchemas(nil, &wire.ModuleSchemas{Revision: 2, Types: []wire.ModuleSchema{
		{Schema: wire.Schema{ID: 1000, Name: "Shout", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 3, MaxLen: 202, StringFieldOffset: 0, RequiresAdmitted: true}, Owner: "greeter"},
		{Schema: wire.Schema{ID: 1001, Name: "Shouted", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 2, MaxLen: 302, StringFieldOffset: 0, RequiresAdmitted: true}, Owner: "greeter"},
	}})
	v.Refused, v.Schemas = refused, schemas
	v.SchemasTyped = wire.AppendModuleSchemas(nil, &wire.ModuleSchemas{Revision: 3, Types: []wire.ModuleSchema{
		{Schema: wire.Schema{ID: 1000, Name: "hello_greet", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 2, MaxLen: 34, StringFieldOffset: 0, RequiresAdmitted: true,
			Fields: []wire.Field{{Name: "name", Kind: wire.KindStr, Max: 32}}}, Owner: "hello"},
		{Schema: wire.Schema{ID: 1002, Name: "state", Direction: wire.BothDirections, Channel: wire.ReliableOrdered, MinLen: 35, MaxLen: 96, StringFieldOffset: 27,
			Fields: []wire.Field{
				{Name: "flag", Kind: wire.KindU8}, {Name: "hp", Kind: wire.KindU16}, {Name: "score", Kind: wire.KindU32},
				{Name: "delta", Kind: wire.KindI32}, {Name: "speed", Kind: wire.KindF32}, {Name: "pos", Kind: wire.KindVec3},
				{Name: "tag", Kind: wire.KindStr, Max: 16}, {Name: "blob", Kind: wire.KindBytes, Max: 8},
				{Name: "ids", Kind: wire.KindArray, Elem: wire.KindU32, Max: 4},
				{Name: "names", Kind: wire.KindArray, Elem: wire.KindStr, ElemMax: 5, Max: 3},
			}}, Owner: "hello"},
	}})
	update := []byte{0x05, 0x00, 0x00, 0x01, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x80, 0x3F, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40}
	score := gamemsg.AppendScoreUpdate(nil, &gamemsg.ScoreUpdate{Scores: []gamemsg.ScoreEntry{{Client: 1, Score: 3, Kills: 3, Deaths: 1}}})
	recs := []wire.Header{
		{Type: wire.TypeAck, Channel: wire.Unreliable},
		{Type: gamemsg.TypeEntityStateUpdate, Channel: wire.Unreliable},
		{Type: gamemsg.TypeScoreUpdate, Channel: wire.ReliableOrdered, Sequence: 6, OrderedSequence: 3},
		{Type: wire.TypeModuleSchemas, Channel: wire.Reliable, Sequence: 7},
		{Type: wire.TypeMessageRefused, Channel: wire.Unreliable},
	}
	payloads := [][]byte{wire.AppendAck(nil, &wire.Ack{Ack: 5, Bits: 0x3, DelayMS: 2}), update, score, schemas, refused}
	body := wire.AppendDatagramBase(nil, v.ServerBase)
	unrel := v.ServerBase
	for i := range recs {
		h := recs[i]
		start := len(body)
		body = wire.AppendRecord(body, &h, payloads[i])
		if h.Channel == wire.Unreliable {
			h.Sequence = unrel // implied by its place in the datagram
			unrel++
		}
		v.ServerRecords = append(v.ServerRecords, vectorRecord{Type: uint16(h.Type), Channel: uint8(h.Channel), Sequence: h.Sequence,
			OrderedSequence: h.OrderedSequence, Payload: payloads[i], Encoded: bytes.Clone(body[start:])})
	}
	v.ServerBody = body
	v.ServerFrame = sealAt(t, keyS2C, v.ServerSeq, body)

	finished := wire.AppendClientFinished(nil, &wire.ClientFinished{Name: "alice"})
	v.FinishedBody = wire.AppendRecord(wire.AppendDatagramBase(nil, 1), &wire.Header{Type: wire.TypeConnect, Channel: wire.Reliable, Sequence: 1}, finished)
	v.FinishedFrame = sealAt(t, keyC2S, 0, v.FinishedBody)

	v.Fragmented = make([]byte, 2500)
	for i := range v.Fragmented {
		v.Fragmented[i] = byte(i * 7)
	}
	f := wire.MaxFragmentPayload(wire.DefaultDatagramSize)
	n := (len(v.Fragmented) + f - 1) / f
	for i := range n {
		h := wire.Header{Type: gamemsg.TypeGameStateSync, Channel: wire.ReliableOrdered, Sequence: 10 + uint32(i), OrderedSequence: 2,
			FragIndex: uint8(i), FragCount: uint8(n)}
		part := v.Fragmented[i*f : min((i+1)*f, len(v.Fragmented))]
		v.FragmentBodies = append(v.FragmentBodies, wire.AppendRecord(wire.AppendDatagramBase(nil, 1), &h, part))
	}
	return v
}

// sealAt seals body as the frame of sequence s in epoch 0 under key.
func sealAt(t *testing.T, key []byte, s uint64, body []byte) []byte {
	t.Helper()
	var k [32]byte
	copy(k[:], key)
	sl := seal.NewSealer(k, seal.RotationConfig{})
	now := time.Unix(0, 0)
	for range s {
		if _, err := sl.Seal(nil, nil, now); err != nil {
			t.Fatal(err)
		}
	}
	out, err := sl.Seal(nil, body, now)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDatagramVectors(t *testing.T) {
	var keys struct {
		KC2S hexString `json:"k_c2s_0"`
		KS2C hexString `json:"k_s2c_0"`
	}
	readJSON(t, "testdata/vectors-v4.json", &keys)
	var file datagramVectors
	readJSON(t, "testdata/vectors-v4-datagram.json", &file)
	built := buildDatagramVectors(t, keys.KS2C, keys.KC2S)
	a, _ := json.MarshalIndent(file, "", "  ")
	b, _ := json.MarshalIndent(built, "", "  ")
	if !bytes.Equal(a, b) {
		t.Fatalf("testdata/vectors-v4-datagram.json differs from what the codecs build:\n%s", b)
	}
	for name, p := range map[string][]byte{"module_schemas_payload": file.Schemas, "module_schemas_typed_payload": file.SchemasTyped} {
		if _, err := wire.ParseModuleSchemas(p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// Parse the server datagram back: open, check, read every record.
	var k [32]byte
	copy(k[:], file.KeyS2C)
	plain, err := seal.NewOpener(k).Open(nil, file.ServerFrame, time.Unix(0, 0))
	if err != nil || !bytes.Equal(plain, file.ServerBody) {
		t.Fatalf("open: %v", err)
	}
	if n, err := wire.CheckDatagram(plain); err != nil || n != len(file.ServerRecords) {
		t.Fatalf("CheckDatagram = %d, %v", n, err)
	}
	rd := wire.NewDatagramReader(plain)
	for i, want := range file.ServerRecords {
		var h wire.Header
		p, ok := rd.Next(&h)
		if !ok || uint16(h.Type) != want.Type || uint8(h.Channel) != want.Channel || h.Sequence != want.Sequence ||
			h.OrderedSequence != want.OrderedSequence || !bytes.Equal(p, want.Payload) {
			t.Fatalf("record %d: %+v % x", i, h, p)
		}
	}
	// The fragments reassemble to the payload.
	var whole []byte
	for i, fb := range file.FragmentBodies {
		rd := wire.NewDatagramReader(fb)
		var h wire.Header
		p, ok := rd.Next(&h)
		if !ok || int(h.FragIndex) != i || int(h.FragCount) != len(file.FragmentBodies) {
			t.Fatalf("fragment %d: %+v", i, h)
		}
		whole = append(whole, p...)
	}
	if !bytes.Equal(whole, file.Fragmented) {
		t.Fatal("fragments do not reassemble to the payload")
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
