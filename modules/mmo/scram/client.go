package scram

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Errors of the login exchange, on either side.
var (
	// ErrChannelBinding: the channel-binding configuration or the c=
	// attribute does not match what this side requires (a proof from another
	// session, a downgrade to "n" or "y", or an unknown cb-name).
	ErrChannelBinding = errors.New("scram: channel binding mismatch")
	// ErrNonce: the peer's nonce does not extend or repeat ours.
	ErrNonce = errors.New("scram: nonce mismatch")
	// ErrAuthFailed: the client's proof does not verify (wrong password, or
	// an account the server does not have). Tell the user nothing more.
	ErrAuthFailed = errors.New("scram: authentication failed")
	// ErrServerSignature: the server's signature does not verify; the server
	// does not hold this account's verifier.
	ErrServerSignature = errors.New("scram: server signature does not verify")
	// ErrServerError: the server answered with e=VALUE.
	ErrServerError = errors.New("scram: server reported an error")
	// ErrUsernameInvalid: a username that is empty, over MaxUsernameLen bytes,
	// not UTF-8 or contains NUL.
	ErrUsernameInvalid = errors.New("scram: username must be 1..64 bytes of UTF-8 without NUL")
	// ErrAuthzID: an authorization identity was given; it is not supported.
	ErrAuthzID = errors.New("scram: authorization identity (a=) is not supported")
	// ErrState: a step was called out of order or after a failure.
	ErrState = errors.New("scram: exchange step out of order")
)

// nonceBytes is the random part of each side's nonce; base64url makes it 24
// characters.
const nonceBytes = 18

// ClientConfig configures a Client. The zero value is a client without channel
// binding that accepts DefaultMinIterations..MaxIterations.
type ClientConfig struct {
	// ChannelBinding is the session's transcript hash th (ChannelBindingLen
	// bytes); the gs2 header is then "p=sparkhost-th,,". Nil sends "n,,",
	// which a sparkhost server refuses.
	ChannelBinding []byte
	// MinIterations refuses a server-first-message with fewer iterations (a
	// server that would make the proof cheap to attack); 0 means
	// DefaultMinIterations.
	MinIterations int
	// MaxIterations refuses a server-first-message with more iterations (a
	// server that would keep the client busy); 0 or above MaxIterations means
	// MaxIterations.
	MaxIterations int
	// Rand supplies the client nonce; nil means crypto/rand.
	Rand io.Reader
}

type clientState uint8

const (
	clientStart clientState = iota
	clientSentFinal
	clientDone
	clientFailed
)

// Client is the client side of one login: First, then Final with the
// server-first-message, then Verify with the server-final-message. A Client is
// used once and is not safe for concurrent use.
type Client struct {
	cfg      ClientConfig
	password string
	first    ClientFirst
	state    clientState
	// serverSig is the signature the server must send, known after Final.
	serverSig [KeyLen]byte
}

// NewClient starts a login of username with password. It checks both
// (ErrUsernameInvalid, ErrPasswordInvalid) and the channel binding's length,
// and draws the client nonce.
func NewClient(username, password string, cfg ClientConfig) (*Client, error) {
	if len(username) == 0 || len(username) > MaxUsernameLen || !utf8.ValidString(username) || strings.IndexByte(username, 0) >= 0 {
		return nil, ErrUsernameInvalid
	}
	if err := CheckPassword(password); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, password: password}
	c.first = ClientFirst{CBFlag: CBNone, Username: username}
	if cfg.ChannelBinding != nil {
		if len(cfg.ChannelBinding) != ChannelBindingLen {
			return nil, fmt.Errorf("%w: channel binding data must be %d bytes, got %d", ErrChannelBinding, ChannelBindingLen, len(cfg.ChannelBinding))
		}
		c.first.CBFlag, c.first.CBName = CBUsed, ChannelBindingName
	}
	nonce, err := newNonce(cfg.Rand)
	if err != nil {
		return nil, err
	}
	c.first.Nonce = nonce
	return c, nil
}

// First returns the client-first-message.
func (c *Client) First() string { return c.first.String() }

// Final checks the server-first-message and returns the client-final-message
// carrying the proof. It runs PBKDF2 with the server's iteration count.
func (c *Client) Final(serverFirst string) (string, error) {
	if c.state != clientStart {
		return "", ErrState
	}
	c.state = clientFailed
	sf, err := ParseServerFirst(serverFirst)
	if err != nil {
		return "", err
	}
	if len(sf.Nonce) <= len(c.first.Nonce) || !strings.HasPrefix(sf.Nonce, c.first.Nonce) {
		return "", ErrNonce
	}
	maxIter := c.cfg.MaxIterations
	if maxIter <= 0 || maxIter > MaxIterations {
		maxIter = MaxIterations
	}
	if err := checkIterations(sf.Iterations, orDefault(c.cfg.MinIterations, DefaultMinIterations), maxIter); err != nil {
		return "", err
	}
	salted, err := saltedPassword(c.password, sf.Salt, sf.Iterations)
	if err != nil {
		return "", err
	}
	clientKey := hmacSum(salted[:], "Client Key")
	storedKey := sha256.Sum256(clientKey[:])
	serverKey := hmacSum(salted[:], "Server Key")

	cf := ClientFinal{ChannelBinding: channelBindingAttr(c.first.GS2Header(), c.cfg.ChannelBinding), Nonce: sf.Nonce}
	authMessage := c.first.Bare() + "," + serverFirst + "," + cf.WithoutProof()
	clientSig := hmacSum(storedKey[:], authMessage)
	for i := range cf.Proof {
		cf.Proof[i] = clientKey[i] ^ clientSig[i]
	}
	c.serverSig = hmacSum(serverKey[:], authMessage)
	c.state = clientSentFinal
	return cf.String(), nil
}

// Verify checks the server-final-message: nil when the server proved it holds
// the account's verifier, ErrServerError (wrapped with the value) for e=, or
// ErrServerSignature.
func (c *Client) Verify(serverFinal string) error {
	if c.state != clientSentFinal {
		return ErrState
	}
	c.state = clientFailed
	sf, err := ParseServerFinal(serverFinal)
	if err != nil {
		return err
	}
	if sf.Error != "" {
		return fmt.Errorf("%w: %s", ErrServerError, sf.Error)
	}
	if !hmac.Equal(sf.Signature[:], c.serverSig[:]) {
		return ErrServerSignature
	}
	c.state = clientDone
	return nil
}

// channelBindingAttr is the data of the c= attribute: gs2 header ‖ cbind data.
func channelBindingAttr(gs2 string, cbData []byte) []byte {
	b := make([]byte, 0, len(gs2)+len(cbData))
	return append(append(b, gs2...), cbData...)
}

func newNonce(rnd io.Reader) (string, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	var b [nonceBytes]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("scram: reading a random nonce: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
