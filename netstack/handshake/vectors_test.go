package handshake_test

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// hexBytes decodes a lowercase hex JSON string.
type hexBytes []byte

func (h *hexBytes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	d, err := hex.DecodeString(s)
	*h = d
	return err
}

type vectors struct {
	Inputs struct {
		ClientSecret hexBytes `json:"client_x25519_secret"`
		ServerSecret hexBytes `json:"server_x25519_secret"`
		ServerSeed   hexBytes `json:"server_ed25519_seed"`
		ClientNonce  hexBytes `json:"client_nonce"`
		ServerNonce  hexBytes `json:"server_nonce"`
		ClientID     uint32   `json:"client_id"`
		ServerTime   float32  `json:"server_time"`
		Version      uint16   `json:"version"`
		Suite        uint8    `json:"suite"`
		ClientName   string   `json:"client_name"`
	} `json:"inputs"`
	ClientPub        hexBytes `json:"client_x25519_public"`
	ServerPub        hexBytes `json:"server_x25519_public"`
	IdentityPub      hexBytes `json:"server_ed25519_public"`
	Pin              string   `json:"server_pin"`
	ClientHello      hexBytes `json:"client_hello"`
	ConnectDatagram  hexBytes `json:"connect_datagram"`
	AcceptPrefix     hexBytes `json:"accept_prefix"`
	ServerHello      hexBytes `json:"server_hello"`
	AcceptedPayload  hexBytes `json:"connect_accepted_payload"`
	AcceptedDatagram hexBytes `json:"connect_accepted_datagram"`
	TranscriptInput  hexBytes `json:"transcript_input"`
	TH               hexBytes `json:"th"`
	Signature        hexBytes `json:"signature"`
	SS               hexBytes `json:"ss"`
	S                hexBytes `json:"S"`
	KC2S0            hexBytes `json:"k_c2s_0"`
	KS2C0            hexBytes `json:"k_s2c_0"`
	KC2S1            hexBytes `json:"k_c2s_1"`
	KS2C1            hexBytes `json:"k_s2c_1"`
	ClientFinished   struct {
		Payload  hexBytes `json:"payload"`
		Packet   hexBytes `json:"packet"`
		Epoch    uint8    `json:"epoch"`
		S        uint64   `json:"s"`
		Key      hexBytes `json:"key"`
		Nonce    hexBytes `json:"nonce"`
		AD       hexBytes `json:"ad"`
		Datagram hexBytes `json:"datagram"`
	} `json:"client_finished"`
}

// The project never reads /work/shared at test time: the vectors are copied here.
const vectorsPath = "../testdata/vectors-v3.json"

func loadVectors(t testing.TB) *vectors {
	t.Helper()
	b, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatalf("read vectors: %v", err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("parse vectors: %v", err)
	}
	return &v
}

func arr32(b []byte) (a [32]byte) { copy(a[:], b); return }
func arr16(b []byte) (a [16]byte) { copy(a[:], b); return }

// fixture is the vector session: server identity, client handshake, the
// checked hello and the server's answer.
type fixture struct {
	v      *vectors
	id     *handshake.ServerIdentity
	client *handshake.ClientHandshake
	hello  handshake.ClientHello
	server *handshake.ServerResult
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	v := loadVectors(t)
	id, err := handshake.NewServerIdentity(ed25519.NewKeyFromSeed(v.Inputs.ServerSeed))
	if err != nil {
		t.Fatal(err)
	}
	client, err := handshake.NewClientHandshakeWith(arr32(v.Inputs.ClientSecret), arr16(v.Inputs.ClientNonce))
	if err != nil {
		t.Fatal(err)
	}
	hello, reason := handshake.CheckClientHello(client.Hello())
	if reason != handshake.RejectNone {
		t.Fatalf("vector hello refused: reason %d", reason)
	}
	res, err := handshake.AcceptWith(id, client.Hello(), hello, v.Inputs.ClientID, v.Inputs.ServerTime,
		arr32(v.Inputs.ServerSecret), arr16(v.Inputs.ServerNonce))
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{v: v, id: id, client: client, hello: hello, server: res}
}

// pinVerifier checks the identity against a fixed pin, as a client with an
// explicit pin does.
func pinVerifier(pin []byte) func([32]byte) error {
	return func(pub [32]byte) error {
		if !bytes.Equal(pub[:], pin) {
			return errPinMismatch
		}
		return nil
	}
}

var errPinMismatch = &pinError{}

type pinError struct{}

func (*pinError) Error() string { return "identity differs from pin" }

func eq(t *testing.T, name string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\n got %x\nwant %x", name, got, want)
	}
}

func TestVectors(t *testing.T) {
	f := newFixture(t)
	v := f.v

	t.Run("publics and pin", func(t *testing.T) {
		cpriv, _ := ecdh.X25519().NewPrivateKey(v.Inputs.ClientSecret)
		spriv, _ := ecdh.X25519().NewPrivateKey(v.Inputs.ServerSecret)
		eq(t, "client_x25519_public", cpriv.PublicKey().Bytes(), v.ClientPub)
		eq(t, "server_x25519_public", spriv.PublicKey().Bytes(), v.ServerPub)
		eq(t, "server_ed25519_public", f.id.Public[:], v.IdentityPub)
		if got := "ed25519:" + base64.RawURLEncoding.EncodeToString(f.id.Public[:]); got != v.Pin {
			t.Errorf("pin %q, want %q", got, v.Pin)
		}
		if len(v.Pin) != len("ed25519:")+43 {
			t.Errorf("pin is not 43 base64url characters")
		}
	})
	t.Run("client hello and connect datagram", func(t *testing.T) {
		eq(t, "client_hello", f.client.Hello(), v.ClientHello)
		enc := f.hello.Append(nil)
		eq(t, "ClientHello.Append", enc, v.ClientHello)
		hdr := wire.Header{Type: wire.TypeConnect}
		eq(t, "connect_datagram", wire.AppendPacket([]byte{0x01}, &hdr, f.client.Hello()), v.ConnectDatagram)
	})
	t.Run("connect accepted", func(t *testing.T) {
		p := f.server.Payload[:]
		eq(t, "accept_prefix", p[:handshake.AcceptPrefixSize], v.AcceptPrefix)
		eq(t, "server_hello", p[handshake.AcceptPrefixSize:], v.ServerHello)
		eq(t, "connect_accepted_payload", p, v.AcceptedPayload)
		eq(t, "signature", p[91:], v.Signature)
		hdr := wire.Header{Type: wire.TypeConnectAccepted, Timestamp: v.Inputs.ServerTime}
		eq(t, "connect_accepted_datagram", wire.AppendPacket([]byte{0x01}, &hdr, p), v.AcceptedDatagram)
	})
	t.Run("transcript and keys", func(t *testing.T) {
		want := append([]byte(handshake.TranscriptLabel), v.ClientHello...)
		want = append(want, v.AcceptPrefix...)
		want = append(want, v.ServerHello[:handshake.ServerHelloSignedSize]...)
		eq(t, "transcript_input", want, v.TranscriptInput)
		th := handshake.Transcript(v.ClientHello, v.AcceptPrefix, v.ServerHello[:81])
		eq(t, "th", th[:], v.TH)
		eq(t, "server th", f.server.TH[:], v.TH)
		if !ed25519.Verify(ed25519.PublicKey(v.IdentityPub), v.TH, v.Signature) {
			t.Error("vector signature does not verify over th")
		}

		cpriv, _ := ecdh.X25519().NewPrivateKey(v.Inputs.ClientSecret)
		spub, _ := ecdh.X25519().NewPublicKey(v.ServerPub)
		ss, err := cpriv.ECDH(spub)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "ss", ss, v.SS)
		s := handshake.SessionSecret(arr32(v.SS), arr32(v.TH))
		eq(t, "S", s[:], v.S)
		c2s, s2c := handshake.DeriveSessionKeys(arr32(v.SS), arr32(v.TH))
		eq(t, "k_c2s_0", c2s[:], v.KC2S0)
		eq(t, "k_s2c_0", s2c[:], v.KS2C0)
		eq(t, "server k_c2s_0", f.server.C2S[:], v.KC2S0)
		eq(t, "server k_s2c_0", f.server.S2C[:], v.KS2C0)
		c1, s1 := handshake.Ratchet(c2s), handshake.Ratchet(s2c)
		eq(t, "k_c2s_1", c1[:], v.KC2S1)
		eq(t, "k_s2c_1", s1[:], v.KS2C1)
	})
	t.Run("client finish", func(t *testing.T) {
		res, err := f.client.Finish(v.AcceptedPayload, pinVerifier(v.IdentityPub))
		if err != nil {
			t.Fatal(err)
		}
		if res.ClientID != v.Inputs.ClientID || res.ServerTime != v.Inputs.ServerTime {
			t.Errorf("client id %d time %v, want %d %v", res.ClientID, res.ServerTime, v.Inputs.ClientID, v.Inputs.ServerTime)
		}
		eq(t, "client th", res.TH[:], v.TH)
		eq(t, "client identity", res.IdentityPub[:], v.IdentityPub)
		eq(t, "client k_c2s_0", res.C2S[:], v.KC2S0)
		eq(t, "client k_s2c_0", res.S2C[:], v.KS2C0)
		if _, err := f.client.Finish(v.AcceptedPayload, pinVerifier(v.IdentityPub)); err != handshake.ErrHandshakeDone {
			t.Errorf("second Finish: %v, want ErrHandshakeDone", err)
		}
	})
	t.Run("client finished datagram", func(t *testing.T) {
		cf := v.ClientFinished
		hdr := wire.Header{Type: wire.TypeConnect, Channel: wire.Reliable, SenderID: v.Inputs.ClientID, Sequence: 1}
		payload := append([]byte{byte(len(v.Inputs.ClientName)), 0}, v.Inputs.ClientName...)
		payload = append(payload, 0, 0) // ticket_len 0
		eq(t, "client_finished.payload", payload, cf.Payload)
		packet := wire.AppendPacket(nil, &hdr, payload)
		eq(t, "client_finished.packet", packet, cf.Packet)
		eq(t, "client_finished.key", cf.Key, v.KC2S0)
		eq(t, "client_finished.ad", cf.AD, cf.Datagram[:seal.HeaderSize])
		if cf.Epoch != 0 || cf.S != 0 || !bytes.Equal(cf.Nonce, make([]byte, 12)) {
			t.Errorf("vector epoch/s/nonce not the first frame")
		}

		now := time.Unix(1000, 0)
		got, err := seal.NewSealer(arr32(v.KC2S0), seal.RotationConfig{}).Seal(nil, packet, now)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "client_finished.datagram", got, cf.Datagram)
		opened, err := seal.NewOpener(arr32(v.KC2S0)).Open(nil, cf.Datagram, now)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "opened client_finished", opened, cf.Packet)
	})
}
