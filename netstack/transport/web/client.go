package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/coder/websocket"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"

	"github.com/sparkhost/sparkhost/netstack/transport"
)

// ClientOptions configure DialWebTransport and DialWebSocket.
type ClientOptions struct {
	// CertHashes are SHA-256 hashes of certificates accepted without a
	// chain (a browser's serverCertificateHashes: ECDSA, valid at most 14
	// days); empty: the certificate is checked against the system's roots.
	CertHashes [][32]byte
	// Origin is sent as the Origin header, as a browser's page would
	// (empty: none).
	Origin string
	// Peer names the server in the transport's reads and writes (the
	// netstack.ClientConfig.Server to give); zero: the connection's remote
	// address.
	Peer netip.AddrPort
	// Dialer, when set, opens WebSocket's TCP connection (to choose its
	// local address).
	Dialer *net.Dialer
	// PacketSize is WebTransport's QUIC packet size before path MTU
	// discovery (0: quic-go's 1,280; at least 1,200; a browser's is about
	// 1,250).
	PacketSize int
}

// Client is the Transport of one web session to a server: every write
// goes to the session whatever its address, reads come from Peer.
type Client struct {
	*Hub
	peer netip.AddrPort
}

// Peer is the address the client's reads name the server by.
func (c *Client) Peer() netip.AddrPort { return c.peer }

// WriteBatch implements transport.Transport: to the one session.
func (c *Client) WriteBatch(msgs []transport.Message) (int, error) {
	for i := range msgs {
		msgs[i].Addr = c.peer
	}
	return c.Hub.WriteBatch(msgs)
}

// maxCertValidity is the longest validity a certificate accepted by hash
// may have (what browsers require of serverCertificateHashes).
const maxCertValidity = 14 * 24 * time.Hour

// verifyByHash returns a tls.Config VerifyConnection that accepts the
// leaf certificate only when its SHA-256 is one of hashes and it is valid
// now, for at most 14 days.
func verifyByHash(hashes [][32]byte) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("web: no server certificate")
		}
		leaf := cs.PeerCertificates[0]
		sum := sha256.Sum256(leaf.Raw)
		now := time.Now()
		if leaf.NotAfter.Sub(leaf.NotBefore) > maxCertValidity || now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
			return errors.New("web: the server certificate is not valid now for at most 14 days")
		}
		for _, h := range hashes {
			if bytes.Equal(h[:], sum[:]) {
				return nil
			}
		}
		return fmt.Errorf("web: the server certificate's SHA-256 %x is not one of the %d expected", sum, len(hashes))
	}
}

func clientTLS(opt ClientOptions) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS13}
	if len(opt.CertHashes) > 0 {
		c.InsecureSkipVerify = true // checked by VerifyConnection instead
		c.VerifyConnection = verifyByHash(opt.CertHashes)
	}
	return c
}

// DialWebTransport opens a WebTransport session at url
// ("https://host:port/wt") and returns its Transport.
func DialWebTransport(ctx context.Context, url string, opt ClientOptions) (*Client, error) {
	hdr := http.Header{}
	if opt.Origin != "" {
		hdr.Set("Origin", opt.Origin)
	}
	tlsConf := clientTLS(opt)
	tlsConf.NextProtos = []string{http3.NextProtoH3}
	d := &webtransport.Transport{TLSClientConfig: tlsConf,
		QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true, KeepAlivePeriod: 5 * time.Second,
			MaxIncomingStreams: -1,
			InitialPacketSize:  uint16(opt.PacketSize)}}
	rsp, sess, err := d.Dial(ctx, url, hdr)
	if err != nil {
		if rsp != nil {
			return nil, fmt.Errorf("web: WebTransport to %s: %s: %w", url, rsp.Status, err)
		}
		return nil, fmt.Errorf("web: WebTransport to %s: %w", url, err)
	}
	max, err := datagramMax(sess)
	if err != nil {
		_ = sess.CloseWithError(1, "no datagrams")
		return nil, err
	}
	remote := addrOf(sess.RemoteAddr())
	c := newClient(addrOf(sess.LocalAddr()), remote, opt.Peer, max)
	p, err := c.Hub.add(c.peer, "webtransport", max, &wtLink{sess: sess, max: max, closer: d, counted: &c.Hub.Overflowed}, nil)
	if err != nil {
		_ = sess.CloseWithError(1, "closed")
		return nil, err
	}
	go serveWT(c.Hub, p, sess)
	return c, nil
}

// DialWebSocket opens a WebSocket session at url ("ws://host:port/ws" or
// wss://) and returns its Transport.
func DialWebSocket(ctx context.Context, url string, opt ClientOptions) (*Client, error) {
	hdr := http.Header{}
	if opt.Origin != "" {
		hdr.Set("Origin", opt.Origin)
	}
	ht := &http.Transport{TLSClientConfig: clientTLS(opt)}
	if opt.Dialer != nil {
		ht.DialContext = opt.Dialer.DialContext
	}
	hc := &http.Client{Transport: ht}
	conn, rsp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: hdr, Subprotocols: []string{Subprotocol}})
	if err != nil {
		if rsp != nil {
			return nil, fmt.Errorf("web: WebSocket to %s: %s: %w", url, rsp.Status, err)
		}
		return nil, fmt.Errorf("web: WebSocket to %s: %w", url, err)
	}
	if conn.Subprotocol() != Subprotocol {
		_ = conn.Close(websocket.StatusPolicyViolation, "subprotocol")
		return nil, fmt.Errorf("web: the server at %s did not select the subprotocol %s", url, Subprotocol)
	}
	conn.SetReadLimit(maxFrame)
	remote, _ := netip.ParseAddrPort(rsp.Request.URL.Host)
	c := newClient(netip.AddrPort{}, remote, opt.Peer, maxFrame)
	rctx, cancel := context.WithCancel(context.Background())
	p, err := c.Hub.add(c.peer, "websocket", maxFrame, &wsLink{c: conn, cancel: cancel}, nil)
	if err != nil {
		cancel()
		_ = conn.Close(websocket.StatusNormalClosure, "closed")
		return nil, err
	}
	go serveWS(rctx, c.Hub, p, conn)
	return c, nil
}

func newClient(local, remote, peer netip.AddrPort, max int) *Client {
	if !peer.IsValid() {
		peer = remote
	}
	if !peer.IsValid() || peer.Port() == 0 {
		peer = netip.AddrPortFrom(netip.IPv4Unspecified(), 1)
	}
	h := NewHub(local, false)
	h.max, h.single = max, true
	return &Client{Hub: h, peer: peer}
}
