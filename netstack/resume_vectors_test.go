package netstack

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

var updateResumeVectors = flag.Bool("update-resume-vectors", false, "rewrite testdata/vectors-resume.json from the code")

// resumeVectors are the values of docs/protocol.md §3.15 for fixed inputs,
// so that a client written from the text checks itself against them.
type resumeVectors struct {
	Comment string `json:"comment"`
	// The resume key of a session: its epoch-0 keys and transcript.
	KC2S, KS2C, THOld, KR string
	// The proof over a new handshake's th.
	THNew, Proof string
	// Payloads.
	ResumeRequest    string
	ResumeTicket     string // hold 30 s, lifetime 3600 s, Ticket below
	ClientFinished   string // name "ann", no admission ticket, the resume extension with Ticket and Proof
	TicketKey        string // K_ticket
	TicketKeyID      uint8
	TicketNonce      string
	TicketClientID   uint32
	TicketGeneration uint32
	TicketExpires    int64
	TicketIdentity   string
	TicketName       string
	Ticket           string // our server's sealed ticket for the claims above
}

func hexBytes(n int, start byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

func to32(b []byte) (k [32]byte) { copy(k[:], b); return }

func computeResumeVectors() resumeVectors {
	c2s, s2c, thOld, thNew := to32(hexBytes(32, 0x00)), to32(hexBytes(32, 0x20)), to32(hexBytes(32, 0x40)), to32(hexBytes(32, 0x60))
	kr := resumeKey(c2s, s2c, thOld)
	proof := resumeProof(kr, thNew)
	key, identity := to32(hexBytes(32, 0x80)), to32(hexBytes(32, 0xA0))
	var nonce [chacha20poly1305.NonceSize]byte
	copy(nonce[:], hexBytes(12, 0xC0))
	claims := ticketClaims{clientID: 7, generation: 2, expires: 1800000000, identity: identity, name: "ann"}
	ticket := sealTicket(newTicketKey(3, key), nonce, &claims)
	cf := wire.ClientFinished{Name: "ann", Resume: &wire.ResumeExtension{Ticket: ticket, Proof: proof}}
	h := hex.EncodeToString
	return resumeVectors{
		Comment: "docs/protocol.md §3.15; byte strings in hex; checked by go test -run TestResumeVectors ./netstack/",
		KC2S:    h(c2s[:]), KS2C: h(s2c[:]), THOld: h(thOld[:]), KR: h(kr[:]),
		THNew: h(thNew[:]), Proof: h(proof[:]),
		ResumeRequest:  h(wire.AppendResumeRequest(nil)),
		ResumeTicket:   h(wire.AppendResumeTicket(nil, &wire.ResumeTicket{HoldSeconds: 30, Lifetime: 3600, Ticket: ticket})),
		ClientFinished: h(wire.AppendClientFinished(nil, &cf)),
		TicketKey:      h(key[:]), TicketKeyID: 3, TicketNonce: h(nonce[:]),
		TicketClientID: 7, TicketGeneration: 2, TicketExpires: 1800000000, TicketIdentity: h(identity[:]), TicketName: "ann",
		Ticket: h(ticket),
	}
}

func TestResumeVectors(t *testing.T) {
	path := filepath.Join("testdata", "vectors-resume.json")
	got := computeResumeVectors()
	if *updateResumeVectors {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want resumeVectors
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if got != want {
		gb, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("the code no longer produces the vectors:\n%s", gb)
	}
	// The sealed ticket opens to its claims, and not under another key.
	tk, _ := hex.DecodeString(want.Ticket)
	k, _ := hex.DecodeString(want.TicketKey)
	c, err := openTicket(newTicketKey(want.TicketKeyID, to32(k)), tk)
	if err != nil || c.clientID != 7 || c.generation != 2 || c.name != "ann" || c.expires != want.TicketExpires {
		t.Fatalf("ticket opens to %+v, %v", c, err)
	}
	k[0] ^= 1
	if _, err := openTicket(newTicketKey(want.TicketKeyID, to32(k)), tk); err == nil {
		t.Fatal("a ticket opened under another key")
	}
	// The ClientFinished parses back to the extension.
	cfb, _ := hex.DecodeString(want.ClientFinished)
	cf, err := wire.ParseClientFinished(cfb)
	if err != nil || cf.Resume == nil || !bytes.Equal(cf.Resume.Ticket, tk) {
		t.Fatalf("ClientFinished: %+v, %v", cf, err)
	}
}

// FuzzOpenTicket: any bytes presented as a ticket are refused without a
// panic, unless they are a ticket this jar sealed.
func FuzzOpenTicket(f *testing.F) {
	v := computeResumeVectors()
	tk, _ := hex.DecodeString(v.Ticket)
	f.Add(tk)
	f.Add([]byte{3})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, _ := hex.DecodeString(v.TicketKey)
		c, err := openTicket(newTicketKey(v.TicketKeyID, to32(k)), b)
		if err == nil && len(c.name) == 0 {
			t.Fatal("a ticket with an empty name opened")
		}
	})
}
