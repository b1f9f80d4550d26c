package v3strict

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Handshake timing of §5.5: the Connect is resent every 500 ms, at most 10
// times.
const (
	connectResend  = 500 * time.Millisecond
	connectResends = 10
)

// Config configures Dial.
type Config struct {
	Server netip.AddrPort
	Name   string
	// Pin is the server's identity, `ed25519:` and 43 base64url characters.
	Pin string
	// Modules are the module types (≥ 1000) this client was told about.
	Modules []Rule
	// Version is the ClientHello's version; 0 means 3. Another version
	// tests the server's refusals (Dial then returns its RejectedError).
	Version uint16
	// Timeout is the liveness timeout of §8; 0 means 10 s.
	Timeout time.Duration
	// GapTimeout is how long an OrderedSequence may stay missing while a
	// successor waits before it is a violation; 0 means 10 s, the
	// connection timeout within which the server must deliver it or give
	// up (§7).
	GapTimeout time.Duration
}

// RejectedError is a ConnectRejected answer (§5.6).
type RejectedError struct {
	Reason        uint8
	ServerVersion uint16
	Detail        string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("ConnectRejected reason %d (server version %d): %s", e.Reason, e.ServerVersion, e.Detail)
}

// DisconnectedError is the Disconnect that closed the connection (§8).
type DisconnectedError struct {
	Reason uint8
	Detail string
}

func (e *DisconnectedError) Error() string {
	return fmt.Sprintf("Disconnect reason %d: %s", e.Reason, e.Detail)
}

// Dial performs the v3 handshake with the server and waits for admission
// (the Ack of ClientFinished). It returns a *RejectedError for a
// ConnectRejected, a *DisconnectedError for a sealed Disconnect (a name
// the server refuses), or an error for anything the contract forbids.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Version == 0 {
		cfg.Version = ProtocolVersion
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.GapTimeout <= 0 {
		cfg.GapTimeout = 10 * time.Second
	}
	pin, err := ParsePin(cfg.Pin)
	if err != nil {
		return nil, err
	}
	table, err := NewTable(cfg.Modules)
	if err != nil {
		return nil, err
	}
	conn, err := listen(cfg.Server)
	if err != nil {
		return nil, err
	}
	c := newClient(cfg, table, conn)
	if err := c.handshake(ctx, pin); err != nil {
		conn.Close()
		return nil, err
	}
	go c.loop()
	select {
	case <-c.admitted:
		return c, nil
	case <-c.done:
		c.Close()
		if d := c.Disconnected(); d != nil {
			return nil, d
		}
		return nil, fmt.Errorf("closed before admission: %w", c.Err())
	case <-ctx.Done():
		c.Close()
		return nil, fmt.Errorf("not admitted: %w (%v)", ctx.Err(), c.Err())
	}
}

// listen opens a UDP socket of the server's address family.
func listen(server netip.AddrPort) (*net.UDPConn, error) {
	network := "udp4"
	if server.Addr().Is6() {
		network = "udp6"
	}
	return net.ListenUDP(network, nil)
}

// handshake sends the Connect until the server answers, verifies the
// ConnectAccepted and sends ClientFinished.
func (c *Client) handshake(ctx context.Context, pin [32]byte) error {
	hello, err := newHello(c.cfg.Version, nil, nil)
	if err != nil {
		return err
	}
	connect := append([]byte{classPlain}, AppendPacket(nil, Header{Type: TypeConnect, Timestamp: c.timestamp(time.Now())}, hello.bytes)...)
	payload, datagram, err := c.awaitAnswer(ctx, connect)
	if err != nil {
		return err
	}
	a, keys, _, err := hello.finish(payload, pin)
	if err != nil {
		return err
	}
	c.id, c.accepted = a.ClientID, datagram
	c.seal, c.open = newSealer(keys.C2S), newOpener(keys.S2C)
	c.lastAuth = time.Now()
	name := []byte(c.cfg.Name)
	cf := append(appendStr(nil, name), 0, 0) // ticket_len 0
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sendReliableLocked(Header{Type: TypeConnect, Channel: Reliable}, cf, false, time.Now())
	return nil
}

// awaitAnswer sends connect every 500 ms (at most 10 resends) until a plain
// answer arrives, and returns the ConnectAccepted payload and datagram, or
// the ConnectRejected as a *RejectedError.
func (c *Client) awaitAnswer(ctx context.Context, connect []byte) ([]byte, []byte, error) {
	buf := make([]byte, 65536)
	for sends := 0; sends <= connectResends; sends++ {
		if _, err := c.conn.WriteToUDPAddrPort(connect, c.cfg.Server); err != nil {
			return nil, nil, err
		}
		until := time.Now().Add(connectResend)
		for time.Now().Before(until) {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			c.conn.SetReadDeadline(until)
			n, from, err := c.conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				break
			}
			if from != c.cfg.Server {
				continue
			}
			d := bytes.Clone(buf[:n])
			p, err := c.plainAnswer(d)
			if err != nil || p != nil {
				return p, d, err
			}
		}
	}
	return nil, nil, errors.New("no answer to 11 Connects")
}

// plainAnswer classifies a datagram received during the handshake: a
// ConnectAccepted payload, a *RejectedError, nil to go on waiting, or a
// violation.
func (c *Client) plainAnswer(d []byte) ([]byte, error) {
	if len(d) == 0 || d[0] != classPlain {
		return nil, fmt.Errorf("answer to a v3 Connect that is not a plain frame (first byte %#x)", firstByte(d))
	}
	h, payload, err := ParsePacket(d[1:])
	if err != nil {
		return nil, err
	}
	if h.Channel != Unreliable || h.SenderID != 0 || h.Sequence != 0 {
		return nil, fmt.Errorf("plain %s with channel %d, SenderID %d, Sequence %d; want 0, 0, 0", TypeName(h.Type), h.Channel, h.SenderID, h.Sequence)
	}
	switch h.Type {
	case TypeConnectAccepted:
		return payload, nil
	case TypeConnectRejected:
		rej, err := ParseConnectRejected(payload)
		if err != nil {
			return nil, err
		}
		return nil, rej
	}
	return nil, fmt.Errorf("plain frame of type %d: only Connect, ConnectAccepted and ConnectRejected travel plain", h.Type)
}

func firstByte(d []byte) byte {
	if len(d) == 0 {
		return 0
	}
	return d[0]
}

// ParseConnectRejected parses a ConnectRejected payload: a reason of §5.6
// (1..7), server_version and a detail of at most 256 bytes.
func ParseConnectRejected(p []byte) (*RejectedError, error) {
	r := reader{b: p}
	rej := &RejectedError{Reason: r.u8(), ServerVersion: r.u16(), Detail: r.text("detail", 256)}
	if err := r.finish(); err != nil {
		return nil, fmt.Errorf("ConnectRejected: %w", err)
	}
	if rej.Reason < RejectProtocolMissing || rej.Reason > RejectBanned {
		return nil, fmt.Errorf("ConnectRejected reason %d is not one of §5.6's 1..7", rej.Reason)
	}
	return rej, nil
}

func appendStr(dst, s []byte) []byte {
	dst = append(dst, byte(len(s)), byte(len(s)>>8))
	return append(dst, s...)
}

// ProbeLegacy sends a bare protocol-v1 Connect packet (§2: 0x4B 52 50 53
// first) and returns the unframed ConnectRejected it must be answered with.
func ProbeLegacy(ctx context.Context, server netip.AddrPort) (*RejectedError, error) {
	conn, err := listen(server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	pkt := AppendPacket(nil, Header{Type: TypeConnect}, make([]byte, 8))
	buf := make([]byte, 65536)
	for range 3 {
		if _, err := conn.WriteToUDPAddrPort(pkt, server); err != nil {
			return nil, err
		}
		conn.SetReadDeadline(time.Now().Add(time.Second))
		if dl, ok := ctx.Deadline(); ok && dl.Before(time.Now().Add(time.Second)) {
			conn.SetReadDeadline(dl)
		}
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil || from != server {
			continue
		}
		h, payload, err := ParsePacket(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("answer to a v1 packet: %w", err)
		}
		if h.Type != TypeConnectRejected {
			return nil, fmt.Errorf("answer to a v1 packet of type %d, want an unframed ConnectRejected", h.Type)
		}
		return ParseConnectRejected(payload)
	}
	return nil, errors.New("no answer to a v1 Connect")
}
