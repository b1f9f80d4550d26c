package wire

import "testing"

// Byte strings copied from the spec's vectors-v3.json; the tests never read the
// spec directory.

func TestSampleHeaderVector(t *testing.T) {
	// sample_header: Heartbeat from client 7, token 0x11223344, echo 0.
	const (
		headerHex = "4b525053050000070000002a0000000000c03f08000000"
		packetHex = "4b525053050000070000002a0000000000c03f080000004433221100000000"
	)
	packet := unhex(t, packetHex)
	h, payload, err := ParsePacket(packet)
	if err != nil {
		t.Fatalf("ParsePacket: %v", err)
	}
	want := Header{Type: TypeHeartbeat, Channel: Unreliable, SenderID: 7, Sequence: 42, Timestamp: 1.5}
	if h != want {
		t.Fatalf("header = %+v, want %+v", h, want)
	}
	if got := string(AppendPacket(nil, &want, payload)); got != string(packet) {
		t.Fatalf("AppendPacket = % x", got)
	}
	if string(packet[:HeaderSize]) != string(unhex(t, headerHex)) {
		t.Fatal("header bytes differ")
	}
	hb, err := ParseHeartbeat(payload)
	if err != nil || hb != (Heartbeat{Token: 0x11223344}) {
		t.Fatalf("ParseHeartbeat = %+v, %v", hb, err)
	}
	if err := NewRegistry().Validate(ClientToServer, &h, payload); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestSampleOrderedHeaderVector(t *testing.T) {
	// sample_ordered_header: EntityDestroy of entity 42 from the server on channel 2.
	const (
		headerHex = "4b5250530800020000000005000000000010400400000002000000"
		packetHex = "4b52505308000200000000050000000000104004000000020000002a000000"
	)
	packet := unhex(t, packetHex)
	h, payload, err := ParsePacket(packet)
	if err != nil {
		t.Fatalf("ParsePacket: %v", err)
	}
	want := Header{Type: 8, // EntityDestroy, a game type of sim/gamemsg
		Channel: ReliableOrdered, Sequence: 5, Timestamp: 2.25, OrderedSequence: 2}
	if h != want {
		t.Fatalf("header = %+v, want %+v", h, want)
	}
	if got := string(AppendPacket(nil, &want, []byte{42, 0, 0, 0})); got != string(packet) {
		t.Fatalf("AppendPacket = % x", got)
	}
	if string(packet[:OrderedHeaderSize]) != string(unhex(t, headerHex)) {
		t.Fatal("header bytes differ")
	}
	if string(payload) != "\x2a\x00\x00\x00" {
		t.Fatalf("payload = % x", payload)
	}
}

func TestSampleAckVector(t *testing.T) {
	// sample_ack_payload: ack 100, bits 2147483653, delay 12 ms; acknowledges 100, 99, 97, 68.
	payload := unhex(t, "64000000050000800c00")
	a, err := ParseAck(payload)
	if err != nil {
		t.Fatalf("ParseAck: %v", err)
	}
	if a != (Ack{Ack: 100, Bits: 2147483653, DelayMS: 12}) {
		t.Fatalf("ParseAck = %+v", a)
	}
	if string(AppendAck(nil, &a)) != string(payload) {
		t.Fatal("AppendAck differs from the vector")
	}
	acked := map[uint32]bool{100: true, 99: true, 97: true, 68: true}
	for seq := uint32(0); seq <= 200; seq++ {
		if a.Acknowledges(seq) != acked[seq] {
			t.Errorf("Acknowledges(%d) = %v", seq, !acked[seq])
		}
	}
}

func TestClientFinishedVector(t *testing.T) {
	// client_finished: type 1, channel 1, SenderID 7, Sequence 1, name "alice", ticket_len 0.
	const (
		payloadHex = "0500616c6963650000"
		packetHex  = "4b525053010001070000000100000000000000090000000500616c6963650000"
	)
	h, payload, err := ParsePacket(unhex(t, packetHex))
	if err != nil {
		t.Fatalf("ParsePacket: %v", err)
	}
	if h != (Header{Type: TypeConnect, Channel: Reliable, SenderID: 7, Sequence: 1}) {
		t.Fatalf("header = %+v", h)
	}
	if string(payload) != string(unhex(t, payloadHex)) {
		t.Fatal("payload differs")
	}
	if err := NewRegistry().Validate(ClientToServer, &h, payload); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	cf, err := ParseClientFinished(payload)
	if err != nil || cf.Name != "alice" || cf.Ticket != nil {
		t.Fatalf("ParseClientFinished = %+v, %v", cf, err)
	}
	if string(AppendClientFinished(nil, &cf)) != string(payload) {
		t.Fatal("AppendClientFinished differs from the vector")
	}
}
