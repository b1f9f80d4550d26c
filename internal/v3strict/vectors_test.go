package v3strict

import (
	"bytes"
	"crypto/ecdh"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// vectors is testdata/vectors-v3.json, a copy of the frozen contract's
// vectors (../shared/spec/vectors-v3.json): the client's codec must
// reproduce every value of it.
type vectors struct {
	Inputs struct {
		ClientSecret string  `json:"client_x25519_secret"`
		ServerSecret string  `json:"server_x25519_secret"`
		ClientNonce  string  `json:"client_nonce"`
		ClientID     uint32  `json:"client_id"`
		ServerTime   float32 `json:"server_time"`
		Name         string  `json:"client_name"`
	} `json:"inputs"`
	ClientPublic     string `json:"client_x25519_public"`
	ServerPublic     string `json:"server_x25519_public"`
	ServerIdentity   string `json:"server_ed25519_public"`
	Pin              string `json:"server_pin"`
	ClientHello      string `json:"client_hello"`
	ConnectDatagram  string `json:"connect_datagram"`
	AcceptPrefix     string `json:"accept_prefix"`
	ServerHello      string `json:"server_hello"`
	AcceptedPayload  string `json:"connect_accepted_payload"`
	AcceptedDatagram string `json:"connect_accepted_datagram"`
	TranscriptInput  string `json:"transcript_input"`
	TH               string `json:"th"`
	Signature        string `json:"signature"`
	SS               string `json:"ss"`
	S                string `json:"S"`
	KC2S0            string `json:"k_c2s_0"`
	KS2C0            string `json:"k_s2c_0"`
	KC2S1            string `json:"k_c2s_1"`
	KS2C1            string `json:"k_s2c_1"`
	ClientFinished   struct {
		Payload  string `json:"payload"`
		Packet   string `json:"packet"`
		Key      string `json:"key"`
		Nonce    string `json:"nonce"`
		AD       string `json:"ad"`
		Datagram string `json:"datagram"`
	} `json:"client_finished"`
	SampleHeader        sample `json:"sample_header"`
	SampleOrderedHeader sample `json:"sample_ordered_header"`
	SampleAck           struct {
		Ack          uint32   `json:"ack"`
		Bits         uint32   `json:"bits"`
		Delay        uint16   `json:"ack_delay_ms"`
		Acknowledges []uint32 `json:"acknowledges"`
		Payload      string   `json:"payload"`
	} `json:"sample_ack_payload"`
}

type sample struct {
	Type      uint16  `json:"type"`
	Channel   uint8   `json:"channel"`
	SenderID  uint32  `json:"sender_id"`
	Sequence  uint32  `json:"sequence"`
	Timestamp float32 `json:"timestamp"`
	Ordered   uint32  `json:"ordered_sequence"`
	Payload   string  `json:"payload"`
	Header    string  `json:"header"`
	Packet    string  `json:"packet"`
}

func loadVectors(t *testing.T) vectors {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors-v3.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("vector %q: %v", s, err)
	}
	return b
}

func same(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if hex.EncodeToString(got) != want {
		t.Errorf("%s:\n got %x\nwant %s", what, got, want)
	}
}

// TestVectorsHandshake: the hello, the Connect datagram, the parse and
// verification of the ConnectAccepted, th, ss, S and the keys of both
// directions and epochs are the contract's, byte for byte.
func TestVectorsHandshake(t *testing.T) {
	v := loadVectors(t)
	ch, err := newHello(3, unhex(t, v.Inputs.ClientSecret), unhex(t, v.Inputs.ClientNonce))
	if err != nil {
		t.Fatal(err)
	}
	same(t, "client public", ch.secret.PublicKey().Bytes(), v.ClientPublic)
	same(t, "client hello", ch.bytes, v.ClientHello)
	same(t, "connect datagram", append([]byte{classPlain}, AppendPacket(nil, Header{Type: TypeConnect}, ch.bytes)...), v.ConnectDatagram)

	d := unhex(t, v.AcceptedDatagram)
	payload, err := (&Client{}).plainAnswer(d)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "accepted payload", payload, v.AcceptedPayload)
	same(t, "accept prefix", payload[:acceptPrefixSize], v.AcceptPrefix)
	same(t, "server hello", payload[acceptPrefixSize:], v.ServerHello)
	pin, err := ParsePin(v.Pin)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "pin", pin[:], v.ServerIdentity)
	a, keys, th, err := ch.finish(payload, pin)
	if err != nil {
		t.Fatal(err)
	}
	if a.ClientID != v.Inputs.ClientID || a.ServerTime != v.Inputs.ServerTime {
		t.Errorf("accepted id %d time %v", a.ClientID, a.ServerTime)
	}
	same(t, "server ephemeral", a.Ephemeral[:], v.ServerPublic)
	same(t, "signature", a.Signature[:], v.Signature)
	same(t, "th", th[:], v.TH)
	same(t, "S", keys.S[:], v.S)
	same(t, "k_c2s_0", keys.C2S[:], v.KC2S0)
	same(t, "k_s2c_0", keys.S2C[:], v.KS2C0)
	c1, s1 := ratchet(keys.C2S), ratchet(keys.S2C)
	same(t, "k_c2s_1", c1[:], v.KC2S1)
	same(t, "k_s2c_1", s1[:], v.KS2C1)

	// ss, from the server's side too.
	sk, err := ecdh.X25519().NewPrivateKey(unhex(t, v.Inputs.ServerSecret))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := sk.ECDH(ch.secret.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	same(t, "ss", ss, v.SS)
	tin := append(append([]byte(transcriptLabel), ch.bytes...), payload[:acceptPrefixSize+signedHelloSize]...)
	same(t, "transcript input", tin, v.TranscriptInput)
}

// TestVectorsHandshakeRefusals: a pin that differs, a signature that does
// not verify and a version that is not 3 are refused.
func TestVectorsHandshakeRefusals(t *testing.T) {
	v := loadVectors(t)
	ch, err := newHello(3, unhex(t, v.Inputs.ClientSecret), unhex(t, v.Inputs.ClientNonce))
	if err != nil {
		t.Fatal(err)
	}
	pin, _ := ParsePin(v.Pin)
	payload := unhex(t, v.AcceptedPayload)
	other := pin
	other[0] ^= 1
	if _, _, _, err := ch.finish(payload, other); err == nil {
		t.Error("another pin accepted")
	}
	bad := bytes.Clone(payload)
	bad[100] ^= 1
	if _, _, _, err := ch.finish(bad, pin); err == nil {
		t.Error("a broken signature accepted")
	}
	bad = bytes.Clone(payload)
	bad[8] = 4
	if _, _, _, err := ch.finish(bad, pin); err == nil {
		t.Error("an echoed version 4 accepted")
	}
}

// TestVectorsClientFinished: the sealed ClientFinished frame.
func TestVectorsClientFinished(t *testing.T) {
	v := loadVectors(t)
	cf := v.ClientFinished
	payload := append(appendStr(nil, []byte(v.Inputs.Name)), 0, 0)
	same(t, "payload", payload, cf.Payload)
	pkt := AppendPacket(nil, Header{Type: TypeConnect, Channel: Reliable, SenderID: v.Inputs.ClientID, Sequence: 1}, payload)
	same(t, "packet", pkt, cf.Packet)
	var key [32]byte
	copy(key[:], unhex(t, cf.Key))
	f := newSealer(key).seal(pkt)
	same(t, "datagram", f, cf.Datagram)
	same(t, "ad", f[:sealedHeader], cf.AD)
	n := nonceOf(0, 0)
	same(t, "nonce", n[:], cf.Nonce)
	if err := (&Table{}).Check(ToServer, Header{Type: TypeConnect, Channel: Reliable}, payload); err != nil {
		t.Errorf("ClientFinished refused: %v", err)
	}
	got, err := newOpener(key).open(f, testNow)
	if err != nil || !bytes.Equal(got, pkt) {
		t.Fatalf("open: %x, %v", got, err)
	}
}

// TestVectorsHeaders: the sample headers encode and parse both ways.
func TestVectorsHeaders(t *testing.T) {
	v := loadVectors(t)
	for _, s := range []sample{v.SampleHeader, v.SampleOrderedHeader} {
		h := Header{Type: s.Type, Channel: Channel(s.Channel), SenderID: s.SenderID, Sequence: s.Sequence, Timestamp: s.Timestamp, Ordered: s.Ordered}
		payload := unhex(t, s.Payload)
		pkt := AppendPacket(nil, h, payload)
		same(t, "packet", pkt, s.Packet)
		same(t, "header", pkt[:len(pkt)-len(payload)], s.Header)
		got, p, err := ParsePacket(unhex(t, s.Packet))
		if err != nil || got != h || !bytes.Equal(p, payload) {
			t.Errorf("ParsePacket = %+v %x %v, want %+v", got, p, err, h)
		}
	}
}

// TestVectorsAck: the Ack payload and what it acknowledges.
func TestVectorsAck(t *testing.T) {
	v := loadVectors(t).SampleAck
	a := Ack{Ack: v.Ack, Bits: v.Bits, DelayMS: v.Delay}
	same(t, "ack payload", AppendAck(nil, a), v.Payload)
	got, err := ParseAck(unhex(t, v.Payload))
	if err != nil || got != a {
		t.Fatalf("ParseAck = %+v, %v", got, err)
	}
	if !slices.Equal(a.Acknowledges(), v.Acknowledges) {
		t.Errorf("acknowledges %v, want %v", a.Acknowledges(), v.Acknowledges)
	}
}
