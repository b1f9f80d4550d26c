package handshake_test

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"net/netip"
	"os"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/cookie"
	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

type vectors4 struct {
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
		CookieSecret hexBytes `json:"cookie_secret"`
		CookieSlot   uint32   `json:"cookie_slot"`
		Source       string   `json:"source"`
		SourceIPv6   string   `json:"source_ipv6"`
	} `json:"inputs"`
	HelloCore         hexBytes `json:"client_hello_core"`
	Hello             hexBytes `json:"client_hello"`
	ConnectDatagram   hexBytes `json:"connect_datagram"`
	CookieMACInput    hexBytes `json:"cookie_mac_input"`
	CookieMAC         hexBytes `json:"cookie_mac"`
	CookieMACIPv6     hexBytes `json:"cookie_mac_ipv6"`
	Cookie            hexBytes `json:"cookie"`
	CookieReply       hexBytes `json:"cookie_reply_payload"`
	CookieReplyDgram  hexBytes `json:"cookie_reply_datagram"`
	HelloWithCookie   hexBytes `json:"client_hello_with_cookie"`
	ConnectWithCookie hexBytes `json:"connect_datagram_with_cookie"`
	AcceptPrefix      hexBytes `json:"accept_prefix"`
	ServerHello       hexBytes `json:"server_hello"`
	AcceptedPayload   hexBytes `json:"connect_accepted_payload"`
	AcceptedDatagram  hexBytes `json:"connect_accepted_datagram"`
	TranscriptInput   hexBytes `json:"transcript_input"`
	TH                hexBytes `json:"th"`
	Signature         hexBytes `json:"signature"`
	SS                hexBytes `json:"ss"`
	S                 hexBytes `json:"S"`
	KC2S0             hexBytes `json:"k_c2s_0"`
	KS2C0             hexBytes `json:"k_s2c_0"`
	V3Downgrade       struct {
		ServerNonce     hexBytes `json:"server_nonce"`
		AcceptedPayload hexBytes `json:"connect_accepted_payload"`
	} `json:"v3_downgrade"`
}

// Copied from the docs' reference values; never read from ../shared.
const vectors4Path = "../testdata/vectors-v4.json"

func loadVectors4(t testing.TB) *vectors4 {
	t.Helper()
	b, err := os.ReadFile(vectors4Path)
	if err != nil {
		t.Fatalf("read vectors: %v", err)
	}
	var v vectors4
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("parse vectors: %v", err)
	}
	return &v
}

// TestVectorsV4 reproduces every value of vectors-v4.json, each from the
// documented construction (HMAC, SHA-256, HKDF and Ed25519 of the standard
// library) as well as through the package's own code.
func TestVectorsV4(t *testing.T) {
	v := loadVectors4(t)
	in := &v.Inputs
	if in.Version != 4 || in.Suite != 1 {
		t.Fatalf("vector version %d suite %d", in.Version, in.Suite)
	}
	client, err := handshake.NewClientHandshake4With(arr32(in.ClientSecret), arr16(in.ClientNonce))
	if err != nil {
		t.Fatal(err)
	}
	id, err := handshake.NewServerIdentity(ed25519.NewKeyFromSeed(in.ServerSeed))
	if err != nil {
		t.Fatal(err)
	}
	connect := wire.Header{Type: wire.TypeConnect}

	t.Run("hello", func(t *testing.T) {
		hello := client.Hello4(nil)
		eq(t, "client_hello", hello, v.Hello)
		eq(t, "client_hello_core", hello[:handshake.HelloCoreSize], v.HelloCore)
		if len(v.Hello) != handshake.ClientHello4Size || len(v.ConnectDatagram) != handshake.HelloDatagramSize {
			t.Fatalf("hello %d bytes, datagram %d", len(v.Hello), len(v.ConnectDatagram))
		}
		cpriv, _ := ecdh.X25519().NewPrivateKey(in.ClientSecret)
		want := binary.LittleEndian.AppendUint32(nil, handshake.HandshakeMagic)
		want = binary.LittleEndian.AppendUint16(want, 4)
		want = append(want, 1)
		want = append(want, cpriv.PublicKey().Bytes()...)
		want = append(want, in.ClientNonce...)
		want = append(want, 0) // cookie_len
		want = append(want, make([]byte, handshake.ClientHello4Size-len(want))...)
		eq(t, "client_hello from its layout", want, v.Hello)
		eq(t, "connect_datagram", wire.AppendPacket([]byte{0x01}, &connect, hello), v.ConnectDatagram)
		h, reason := handshake.CheckClientHello4(v.Hello)
		if reason != handshake.RejectNone || len(h.Cookie) != 0 {
			t.Fatalf("vector hello refused (%d) or has a cookie", reason)
		}
	})
	t.Run("cookie", func(t *testing.T) {
		src := netip.MustParseAddrPort(in.Source)
		msg := []byte(cookie.Label)
		msg = binary.LittleEndian.AppendUint32(msg, in.CookieSlot)
		a := src.Addr().As16()
		msg = append(msg, a[:]...)
		msg = binary.LittleEndian.AppendUint16(msg, src.Port())
		msg = append(msg, v.HelloCore...)
		eq(t, "cookie_mac_input", msg, v.CookieMACInput)
		mac := hmac.New(sha256.New, in.CookieSecret)
		mac.Write(msg)
		eq(t, "cookie_mac (crypto/hmac)", mac.Sum(nil)[:cookie.MACSize], v.CookieMAC)
		secret := arr32(in.CookieSecret)
		got := cookie.MAC(&secret, in.CookieSlot, src, v.HelloCore)
		eq(t, "cookie_mac", got[:], v.CookieMAC)
		got6 := cookie.MAC(&secret, in.CookieSlot, netip.MustParseAddrPort(in.SourceIPv6), v.HelloCore)
		eq(t, "cookie_mac_ipv6", got6[:], v.CookieMACIPv6)
		eq(t, "cookie", append(binary.LittleEndian.AppendUint32(nil, in.CookieSlot), v.CookieMAC...), v.Cookie)
	})
	t.Run("cookie reply", func(t *testing.T) {
		nonce := arr16(in.ClientNonce)
		eq(t, "cookie_reply_payload", handshake.AppendCookieReply(nil, &nonce, v.Cookie), v.CookieReply)
		want := []byte{4, 0}
		want = append(want, in.ClientNonce...)
		want = append(want, byte(len(v.Cookie)))
		want = append(want, v.Cookie...)
		eq(t, "cookie_reply_payload from its layout", want, v.CookieReply)
		hdr := wire.Header{Type: wire.TypeCookieReply, Timestamp: in.ServerTime}
		eq(t, "cookie_reply_datagram", wire.AppendPacket([]byte{0x01}, &hdr, v.CookieReply), v.CookieReplyDgram)
		cr, err := handshake.ParseCookieReply(v.CookieReply)
		if err != nil || cr.Nonce != client.Nonce() || !bytes.Equal(cr.Cookie, v.Cookie) {
			t.Fatalf("ParseCookieReply = %+v, %v", cr, err)
		}
		hello := client.Hello4(cr.Cookie)
		eq(t, "client_hello_with_cookie", hello, v.HelloWithCookie)
		eq(t, "connect_datagram_with_cookie", wire.AppendPacket([]byte{0x01}, &connect, hello), v.ConnectWithCookie)
		if !bytes.Equal(hello[:handshake.HelloCoreSize], v.HelloCore) {
			t.Fatal("the echo changed the hello core")
		}
	})
	t.Run("connect accepted and keys", func(t *testing.T) {
		res, err := handshake.AcceptV4With(id, v.HelloWithCookie, in.ClientID, in.ServerTime, arr32(in.ServerSecret), arr16(in.ServerNonce))
		if err != nil {
			t.Fatal(err)
		}
		p := res.Payload[:]
		eq(t, "connect_accepted_payload", p, v.AcceptedPayload)
		eq(t, "accept_prefix", p[:handshake.AcceptPrefixSize], v.AcceptPrefix)
		eq(t, "server_hello", p[handshake.AcceptPrefixSize:], v.ServerHello)
		if binary.LittleEndian.Uint16(v.AcceptPrefix[8:]) != 4 {
			t.Fatal("the accept prefix does not echo version 4")
		}
		hdr := wire.Header{Type: wire.TypeConnectAccepted, Timestamp: in.ServerTime}
		eq(t, "connect_accepted_datagram", wire.AppendPacket([]byte{0x01}, &hdr, p), v.AcceptedDatagram)

		ti := append([]byte("SPNH-v4"), v.HelloCore...)
		ti = append(ti, v.AcceptPrefix...)
		ti = append(ti, v.ServerHello[:handshake.ServerHelloSignedSize]...)
		eq(t, "transcript_input", ti, v.TranscriptInput)
		th := sha256.Sum256(ti)
		eq(t, "th", th[:], v.TH)
		eq(t, "server th", res.TH[:], v.TH)
		th4 := handshake.TranscriptV4(v.HelloCore, v.AcceptPrefix, v.ServerHello[:81])
		eq(t, "TranscriptV4", th4[:], v.TH)
		eq(t, "signature", p[91:], v.Signature)
		if !ed25519.Verify(ed25519.NewKeyFromSeed(in.ServerSeed).Public().(ed25519.PublicKey), v.TH, v.Signature) {
			t.Fatal("the signature does not verify over th")
		}

		cpriv, _ := ecdh.X25519().NewPrivateKey(in.ClientSecret)
		spub, _ := ecdh.X25519().NewPublicKey(v.ServerHello[33:65])
		ss, err := cpriv.ECDH(spub)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "ss", ss, v.SS)
		S, err := hkdf.Key(sha256.New, ss, v.TH, "spark-net-100 session v4", 32)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "S", S, v.S)
		s4 := handshake.SessionSecretV4(arr32(v.SS), arr32(v.TH))
		eq(t, "SessionSecretV4", s4[:], v.S)
		c2s, _ := hkdf.Expand(sha256.New, S, "spark-net-100 c2s", 32)
		s2c, _ := hkdf.Expand(sha256.New, S, "spark-net-100 s2c", 32)
		eq(t, "k_c2s_0", c2s, v.KC2S0)
		eq(t, "k_s2c_0", s2c, v.KS2C0)
		eq(t, "server k_c2s_0", res.C2S[:], v.KC2S0)
		eq(t, "server k_s2c_0", res.S2C[:], v.KS2C0)
		dc, ds := handshake.DeriveSessionKeysV4(arr32(v.SS), arr32(v.TH))
		eq(t, "DeriveSessionKeysV4", append(dc[:], ds[:]...), append(bytes.Clone(v.KC2S0), v.KS2C0...))

		cr, err := client.Finish(v.AcceptedPayload, pinVerifier(ed25519.NewKeyFromSeed(in.ServerSeed)[32:]))
		if err != nil {
			t.Fatal(err)
		}
		if cr.Version != 4 || cr.ClientID != in.ClientID || cr.DowngradeMarked {
			t.Fatalf("client result %+v", cr)
		}
		eq(t, "client th", cr.TH[:], v.TH)
		eq(t, "client k_c2s_0", cr.C2S[:], v.KC2S0)
		eq(t, "client k_s2c_0", cr.S2C[:], v.KS2C0)
	})
	t.Run("v3 answer with the downgrade sentinel", func(t *testing.T) {
		v3 := loadVectors(t)
		n := v.V3Downgrade.ServerNonce
		eq(t, "server_nonce", n[:8], v3.Inputs.ServerNonce[:8])
		eq(t, "sentinel", n[8:], []byte("SPv4DOWN"))
		hello, _ := handshake.CheckClientHello(v3.ClientHello)
		res, err := handshake.AcceptWith(id, v3.ClientHello, hello, v3.Inputs.ClientID, v3.Inputs.ServerTime, arr32(v3.Inputs.ServerSecret), arr16(n))
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "v3_downgrade.connect_accepted_payload", res.Payload[:], v.V3Downgrade.AcceptedPayload)
		c3, _ := handshake.NewClientHandshakeWith(arr32(v3.Inputs.ClientSecret), arr16(v3.Inputs.ClientNonce))
		r, err := c3.Finish(v.V3Downgrade.AcceptedPayload, pinVerifier(v3.IdentityPub))
		if err != nil || !r.DowngradeMarked {
			t.Fatalf("Finish = %+v, %v; want DowngradeMarked", r, err)
		}
		c3b, _ := handshake.NewClientHandshakeWith(arr32(v3.Inputs.ClientSecret), arr16(v3.Inputs.ClientNonce))
		if r, err := c3b.Finish(v3.AcceptedPayload, pinVerifier(v3.IdentityPub)); err != nil || r.DowngradeMarked {
			t.Fatalf("the plain v3 vector is marked: %+v, %v", r, err)
		}
	})
}
