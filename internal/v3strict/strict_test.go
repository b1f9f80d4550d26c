package v3strict

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

var testNow = time.Unix(1_000_000, 0)

func gss(id uint32) []byte {
	var p []byte
	p = binary.LittleEndian.AppendUint32(p, id)
	p = binary.LittleEndian.AppendUint32(p, 0) // server_time 0.0
	p = binary.LittleEndian.AppendUint16(p, 60)
	p = binary.LittleEndian.AppendUint16(p, 20)
	p = appendStr(p, []byte("srv"))
	p = appendStr(p, nil)
	p = appendStr(p, []byte("map"))
	p = append(p, 0, 1)                        // mode, match_state
	p = binary.LittleEndian.AppendUint32(p, 0) // time_remaining
	p = binary.LittleEndian.AppendUint16(p, 1) // one type: 5 "box" {hp int32, pos vec3}
	p = binary.LittleEndian.AppendUint16(p, 5)
	p = appendStr(p, []byte("box"))
	p = append(p, 2)
	p = append(appendStr(p, []byte("hp")), 1, 0)
	p = append(appendStr(p, []byte("pos")), 4, 0)
	return p
}

// TestTableRefusesWhatV3DoesNotDefine: every rule of §3 and §4 a server's
// packet can break is caught.
func TestTableRefusesWhatV3DoesNotDefine(t *testing.T) {
	tab, err := NewTable([]Rule{{ID: 1303, Name: "Map", Dir: ToClient, Channel: ReliableOrdered, Min: 3, Max: 66, StringOffset: 0}})
	if err != nil {
		t.Fatal(err)
	}
	score := binary.LittleEndian.AppendUint16(nil, 0)
	cases := []struct {
		name    string
		dir     uint8
		h       Header
		payload []byte
		want    string // "" = accepted
	}{
		{"ScoreUpdate", ToClient, Header{Type: TypeScoreUpdate, Channel: ReliableOrdered}, score, ""},
		{"RoomState is v4", ToClient, Header{Type: 43, Channel: ReliableOrdered}, make([]byte, 30), "not a v3 type"},
		{"RoomEvent is v4", ToClient, Header{Type: 44, Channel: ReliableOrdered}, make([]byte, 20), "not a v3 type"},
		{"MessageRefused is v4", ToClient, Header{Type: 20, Channel: Unreliable}, make([]byte, 12), "not a v3 type"},
		{"ModuleSchemas is v4", ToClient, Header{Type: 21, Channel: Reliable}, make([]byte, 6), "not a v3 type"},
		{"unknown module type", ToClient, Header{Type: 1401, Channel: ReliableOrdered}, make([]byte, 9), "not a v3 type"},
		{"wrong channel", ToClient, Header{Type: TypeScoreUpdate, Channel: Reliable}, score, "must use"},
		{"wrong direction", ToClient, Header{Type: TypeClientInput, Channel: Unreliable}, make([]byte, 29), "may not travel"},
		{"bad size", ToClient, Header{Type: TypeHeartbeat, Channel: Unreliable}, make([]byte, 9), "size"},
		{"sealed ConnectAccepted", ToClient, Header{Type: TypeConnectAccepted, Channel: Unreliable}, make([]byte, 155), "plain"},
		{"ScoreUpdate count", ToClient, Header{Type: TypeScoreUpdate, Channel: ReliableOrdered}, []byte{2, 0, 0, 0}, "entries"},
		{"Disconnect reason 12", ToClient, Header{Type: TypeDisconnect, Channel: Unreliable}, []byte{12, 0, 0}, "reason 12"},
		{"Disconnect reason 11", ToClient, Header{Type: TypeDisconnect, Channel: Unreliable}, []byte{11, 0, 0}, ""},
		{"chat without sender", ToClient, Header{Type: TypeChatMessage, Channel: Reliable}, append(appendStr(nil, nil), appendStr(nil, []byte("hi"))...), "name rule"},
		{"chat with a sender from a client", ToServer, Header{Type: TypeChatMessage, Channel: Reliable}, append(appendStr(nil, []byte("me")), appendStr(nil, []byte("hi"))...), "empty"},
		{"GameStateSync", ToClient, Header{Type: TypeGameStateSync, Channel: ReliableOrdered}, gss(7), ""},
		{"GameStateSync trailing byte", ToClient, Header{Type: TypeGameStateSync, Channel: ReliableOrdered}, append(gss(7), 0), "after the last field"},
		{"module Map", ToClient, Header{Type: 1303, Channel: ReliableOrdered}, appendStr(nil, []byte("dm1")), ""},
		{"module Map bad string", ToClient, Header{Type: 1303, Channel: ReliableOrdered}, appendStr(nil, []byte{'a', 0, 'b'}), "NUL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tab.Check(tc.dir, tc.h, tc.payload)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func ordered(seq, ord uint32) Message {
	return Message{Type: TypeScoreUpdate, Channel: ReliableOrdered, Sequence: seq, Ordered: ord}
}

// TestInboundOrder: ordered delivery holds a gap, fills it, acks duplicates
// without delivering them, refuses a reused OrderedSequence and drops
// (unacknowledged) what is beyond MAX_REORDER_AHEAD.
func TestInboundOrder(t *testing.T) {
	in := newInbound()
	if v, out, err := in.arrive(ordered(1, 1), testNow); v != fresh || len(out) != 1 || err != nil {
		t.Fatalf("first: %v %v %v", v, out, err)
	}
	if _, out, _ := in.arrive(ordered(3, 3), testNow); len(out) != 0 {
		t.Fatalf("delivered past a gap: %v", out)
	}
	if seq, since := in.oldestGap(); seq != 2 || since.IsZero() {
		t.Fatalf("gap %d since %v", seq, since)
	}
	if _, out, _ := in.arrive(ordered(2, 2), testNow); len(out) != 2 || out[0].Ordered != 2 || out[1].Ordered != 3 {
		t.Fatalf("gap filled: %v", out)
	}
	if v, out, _ := in.arrive(ordered(2, 2), testNow); v != duplicate || out != nil {
		t.Fatalf("duplicate: %v %v", v, out)
	}
	if _, _, err := in.arrive(ordered(4, 3), testNow); err == nil {
		t.Fatal("a new sequence reusing OrderedSequence 3 passed")
	}
	if v, _, _ := in.arrive(ordered(10, 4+MaxReorderAhead+1), testNow); v != tooFar || in.received[10] {
		t.Fatalf("beyond MAX_REORDER_AHEAD: %v, marked received %v", v, in.received[10])
	}
	if a := in.ackOf(4); a.Ack != 4 || a.Bits != 0b111 {
		t.Fatalf("ack %+v", a)
	}
}

// TestOutboundAcks: an Ack of a sequence never sent, or of a probe, is a
// violation; a packet never acknowledged fails after 10 retransmissions.
func TestOutboundAcks(t *testing.T) {
	o := newOutbound()
	o.add(Header{Type: TypeChatMessage, Channel: Reliable}, nil, false, testNow)
	probe := o.add(Header{Type: 999, Channel: Reliable}, nil, true, testNow)
	if err := o.onAck(Ack{Ack: 1}); err != nil || o.unacked() != 0 {
		t.Fatalf("ack 1: %v, unacked %d", err, o.unacked())
	}
	if err := o.onAck(Ack{Ack: 3}); err == nil {
		t.Fatal("an Ack of sequence 3, never sent, passed")
	}
	if err := o.onAck(Ack{Ack: probe.h.Sequence}); err == nil {
		t.Fatal("an Ack of the probe passed")
	}
	o.add(Header{Type: TypeChatMessage, Channel: Reliable}, nil, false, testNow)
	now := testNow
	for range maxRetransmits {
		now = now.Add(8 * initialRTO)
		if again, err := o.due(now); err != nil || len(again) != 1 {
			t.Fatalf("retransmission: %v %v", again, err)
		}
	}
	if _, err := o.due(now.Add(8 * initialRTO)); err == nil {
		t.Fatal("no failure after 10 retransmissions")
	}
}

// TestReplayWindow: a repeat and a frame older than the window are refused;
// nothing overflows near the top of u64.
func TestReplayWindow(t *testing.T) {
	var key [32]byte
	s, o := newSealer(key), newOpener(key)
	f0 := s.seal([]byte("a"))
	if _, err := o.open(f0, testNow); err != nil {
		t.Fatal(err)
	}
	if _, err := o.open(f0, testNow); err != errReplay {
		t.Fatalf("repeat: %v", err)
	}
	var last []byte
	for range replayWindow + 1 {
		last = s.seal([]byte("b"))
	}
	if _, err := o.open(last, testNow); err != nil {
		t.Fatal(err)
	}
	s.s = 1
	if _, err := o.open(s.seal([]byte("c")), testNow); err != errReplay {
		t.Fatalf("older than the window: %v", err)
	}
	forged := append([]byte(nil), last...)
	forged[3] ^= 0x40
	if _, err := o.open(forged, testNow); err == nil || err == errReplay {
		t.Fatalf("forged frame: %v", err)
	}
	if !o.fresh(^uint64(0)) {
		t.Fatal("the top sequence refused")
	}
}

// TestSpawnAndUpdateFields: entity fields are checked against the types of
// the last GameStateSync.
func TestSpawnAndUpdateFields(t *testing.T) {
	g, err := ParseGameStateSync(gss(7))
	if err != nil {
		t.Fatal(err)
	}
	spawn := binary.LittleEndian.AppendUint32(nil, 9)
	spawn = append(spawn, 2)
	spawn = binary.LittleEndian.AppendUint64(spawn, 0b11)
	spawn = binary.LittleEndian.AppendUint16(spawn, 5)
	spawn = binary.LittleEndian.AppendUint32(spawn, 0)
	spawn = append(spawn, make([]byte, 16)...)
	id, e, err := checkSpawn(g.Types, spawn)
	if err != nil || id != 9 {
		t.Fatalf("spawn: %d %v", id, err)
	}
	if _, _, err := checkSpawn(g.Types, spawn[:len(spawn)-1]); err == nil {
		t.Fatal("short spawn passed")
	}
	upd := binary.LittleEndian.AppendUint32(nil, 9)
	upd = binary.LittleEndian.AppendUint64(upd, 0b10)
	upd = append(upd, make([]byte, 12)...)
	if err := checkUpdate(e, upd); err != nil {
		t.Fatalf("update: %v", err)
	}
	bad := binary.LittleEndian.AppendUint32(nil, 9)
	bad = binary.LittleEndian.AppendUint64(bad, 0b100)
	if err := checkUpdate(e, bad); err == nil {
		t.Fatal("a dirty bit beyond the type's fields passed")
	}
}
