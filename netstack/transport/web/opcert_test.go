package web_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"

	"github.com/sparkhost/sparkhost/netstack/transport/web"
)

// operatorCert writes a certificate and key (PEM) for 127.0.0.1 and
// returns their paths and the certificate's SHA-256.
func operatorCert(t *testing.T) (certFile, keyFile string, sum [32]byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "operator"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile, sha256.Sum256(der)
}

// TestOperatorCertificate: with an operator's certificate both listeners
// serve it (wss:// on TCP), no hash is published, and sessions over both
// transports are admitted.
func TestOperatorCertificate(t *testing.T) {
	cf, kf, sum := operatorCert(t)
	r := startRig(t, func(c *web.Config) { c.CertFile, c.KeyFile = cf, kf })
	if !r.web.TLS() || len(r.web.CertHashes()) != 0 {
		t.Fatalf("TLS %v, hashes %d; want TLS and no published hash", r.web.TLS(), len(r.web.CertHashes()))
	}
	if in := r.web.Describe(); in.WebSocket == nil || !in.WebSocket.TLS || len(in.WebTransport.CertHashes) != 0 {
		t.Fatalf("/web.json %+v", in)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	opt := web.ClientOptions{CertHashes: [][32]byte{sum}}
	ws, err := web.DialWebSocket(ctx, fmt.Sprintf("wss://127.0.0.1:%d%s", r.web.Port(), web.PathWebSocket), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	wt, err := web.DialWebTransport(ctx, wtURL(r), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Close()
}

// TestBadOverflowFrameEndsSession: a WebTransport peer whose overflow
// stream carries a frame of length 0 loses its session; nothing of it
// reaches the server.
func TestBadOverflowFrameEndsSession(t *testing.T) {
	r := startRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	d := &webtransport.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{http3.NextProtoH3}},
		QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true}}
	defer d.Close()
	_, sess, err := d.Dial(ctx, wtURL(r), http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the session registered", func() bool { return r.hub.Sessions() == 1 })
	s, err := sess.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	before := r.srv.Stats().PacketsReceived
	if _, err := s.Write([]byte{0, 0, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the session ended", func() bool { return r.hub.Sessions() == 0 })
	select {
	case <-sess.Context().Done():
	case <-time.After(waitLong):
		t.Fatal("the client's session is still open")
	}
	if got := r.srv.Stats().PacketsReceived - before; got != 0 {
		t.Fatalf("%d datagrams reached the server", got)
	}
}
