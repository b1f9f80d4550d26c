package netstack_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/sparkhost/sparkhost/netstack/seal"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// migrationVectors is testdata/vectors-v4-migration.json: the path messages'
// payloads and a class-0x03 frame (docs/protocol.md §4.1), all hex.
type migrationVectors struct {
	Comment       string `json:"comment"`
	Token         string `json:"token"`
	ConnectionID  string `json:"connection_id"`
	PathChallenge string `json:"path_challenge_payload"`
	PathResponse  string `json:"path_response_payload"`
	Frame         struct {
		Key       string `json:"key_c2s_epoch0"`
		Epoch     uint8  `json:"epoch"`
		Sequence  uint64 `json:"frame_sequence"`
		Plaintext string `json:"plaintext_body"`
		Nonce     string `json:"nonce"`
		AD        string `json:"additional_data"`
		Datagram  string `json:"datagram"`
	} `json:"class_0x03_frame"`
}

// buildMigrationVectors computes every value from its inputs with the
// project's codecs and sealer.
func buildMigrationVectors(t *testing.T) migrationVectors {
	var v migrationVectors
	v.Comment = "docs/protocol.md §4.1: the frame carries a PathResponse (unreliable, Sequence 7) answering the token, with the connection id; sealed after 5 frames of class 0x02"
	token := [8]byte{0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE}
	id := [8]byte{0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07, 0x18}
	var key [32]byte
	for i := range key {
		key[i] = byte(0x40 + i)
	}
	v.Token, v.ConnectionID = hex.EncodeToString(token[:]), hex.EncodeToString(id[:])
	v.PathChallenge = hex.EncodeToString(wire.AppendPathChallenge(nil, &wire.PathChallenge{Token: token}))
	resp := wire.AppendPathResponse(nil, &wire.PathResponse{Token: token, ID: id})
	v.PathResponse = hex.EncodeToString(resp)
	h := wire.Header{Type: wire.TypePathResponse, Channel: wire.Unreliable, Sequence: 7}
	body := wire.AppendRecord(wire.AppendDatagramBase(nil, 7), &h, resp)
	s := seal.NewSealer(key, seal.RotationConfig{})
	t0 := time.Unix(0, 0)
	for range 5 {
		if _, err := s.Seal(nil, []byte{0}, t0); err != nil {
			t.Fatal(err)
		}
	}
	s.SetID(id)
	d, err := s.Seal(nil, body, t0)
	if err != nil {
		t.Fatal(err)
	}
	f := &v.Frame
	f.Key, f.Epoch, f.Sequence = hex.EncodeToString(key[:]), 0, 5
	f.Plaintext = hex.EncodeToString(body)
	f.Nonce = "00000000" + "0500000000000000"
	f.AD = hex.EncodeToString(d[:seal.HeaderSizeID])
	f.Datagram = hex.EncodeToString(d)
	return v
}

// The vectors file is what the code produces, byte for byte; and the frame
// in it opens under its key with its id (SPARK_UPDATE_VECTORS=1 rewrites it).
func TestMigrationVectors(t *testing.T) {
	const path = "testdata/vectors-v4-migration.json"
	want := buildMigrationVectors(t)
	out, _ := json.MarshalIndent(want, "", "  ")
	out = append(out, '\n')
	if os.Getenv("SPARK_UPDATE_VECTORS") == "1" {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, out) {
		t.Fatalf("%s differs from what the code produces:\n%s", path, out)
	}
	var key [32]byte
	kb, _ := hex.DecodeString(want.Frame.Key)
	copy(key[:], kb)
	d, _ := hex.DecodeString(want.Frame.Datagram)
	o := seal.NewOpener(key)
	p, err := o.Open(nil, d, time.Unix(0, 0))
	if err != nil || hex.EncodeToString(p) != want.Frame.Plaintext {
		t.Fatalf("the vector frame opens to %x, %v", p, err)
	}
	if id, ok := seal.FrameID(d); !ok || hex.EncodeToString(id[:]) != want.ConnectionID {
		t.Fatalf("frame id %x", id)
	}
	// From the spec alone: AEAD over the plaintext with nonce and AD as §4.1 lays them out.
	aead, _ := chacha20poly1305.New(key[:])
	nonce, _ := hex.DecodeString(want.Frame.Nonce)
	ad, _ := hex.DecodeString(want.Frame.AD)
	if !bytes.Equal(ad[:3], []byte{0x03, 0x01, want.Frame.Epoch}) || hex.EncodeToString(ad[11:]) != want.ConnectionID {
		t.Fatalf("additional data %x", ad)
	}
	if again := aead.Seal(bytes.Clone(ad), nonce, p, ad); !bytes.Equal(again, d) {
		t.Fatalf("sealed from the spec: %x, want %x", again, d)
	}
	var h wire.Header
	r := wire.NewDatagramReader(p)
	payload, ok := r.Next(&h)
	if !ok || h.Type != wire.TypePathResponse || h.Sequence != 7 || hex.EncodeToString(payload) != want.PathResponse {
		t.Fatalf("record %+v %x", h, payload)
	}
}
