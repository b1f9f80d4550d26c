package scram

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// ChannelBinding is the session's transcript hash th (ChannelBindingLen
	// bytes). With it the client must send "p=sparkhost-th,," and bind this
	// very value; "n" is refused and "y" is refused as a downgrade. Nil means
	// a server without channel binding (RFC test vectors only): "n" and "y"
	// are accepted and "p" is refused.
	ChannelBinding []byte
	// Rand supplies the server nonce; nil means crypto/rand.
	Rand io.Reader
}

type serverState uint8

const (
	serverStart serverState = iota
	serverReadFirst
	serverSentFirst
	serverDone
	serverFailed
)

// Server is the server side of one login: ReadClientFirst, then ServerFirst
// with the account's stored Verifier (or a MockVerifier for an unknown name),
// then ReadClientFinal. The server never runs PBKDF2: its cost per login is a
// few hashes whatever the iteration count. A Server is used once and is not
// safe for concurrent use.
type Server struct {
	cfg         ServerConfig
	first       ClientFirst
	gs2         string
	serverFirst string
	nonce       string
	verifier    Verifier
	state       serverState
}

// NewServer returns a Server, or ErrChannelBinding when cfg.ChannelBinding is
// neither nil nor ChannelBindingLen bytes.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.ChannelBinding != nil && len(cfg.ChannelBinding) != ChannelBindingLen {
		return nil, fmt.Errorf("%w: channel binding data must be %d bytes, got %d", ErrChannelBinding, ChannelBindingLen, len(cfg.ChannelBinding))
	}
	return &Server{cfg: cfg}, nil
}

// ReadClientFirst parses and checks the client-first-message and returns it;
// its Username names the account whose verifier ServerFirst needs. Errors:
// ErrMalformed, ErrChannelBinding, ErrAuthzID, ErrNonce (a client nonce too
// long to extend), ErrState.
func (s *Server) ReadClientFirst(msg string) (ClientFirst, error) {
	if s.state != serverStart {
		return ClientFirst{}, ErrState
	}
	s.state = serverFailed
	m, err := ParseClientFirst(msg)
	if err != nil {
		return ClientFirst{}, err
	}
	if err := s.checkGS2(&m); err != nil {
		return ClientFirst{}, err
	}
	if m.AuthzID != "" {
		return ClientFirst{}, ErrAuthzID
	}
	if len(m.Nonce) > MaxNonceLen-serverNonceLen {
		return ClientFirst{}, fmt.Errorf("%w: client nonce longer than %d characters", ErrNonce, MaxNonceLen-serverNonceLen)
	}
	s.first, s.gs2, s.state = m, m.GS2Header(), serverReadFirst
	return m, nil
}

// serverNonceLen is the length of the server's nonce part.
const serverNonceLen = (nonceBytes*8 + 5) / 6

func (s *Server) checkGS2(m *ClientFirst) error {
	if s.cfg.ChannelBinding == nil {
		if m.CBFlag == CBUsed {
			return fmt.Errorf("%w: this server offers no channel binding", ErrChannelBinding)
		}
		return nil
	}
	switch {
	case m.CBFlag == CBNone:
		return fmt.Errorf("%w: channel binding %q is required", ErrChannelBinding, ChannelBindingName)
	case m.CBFlag == CBUnsupported:
		return fmt.Errorf("%w: the client believes the server has no channel binding (downgrade)", ErrChannelBinding)
	case m.CBName != ChannelBindingName:
		return fmt.Errorf("%w: unsupported channel binding type %q", ErrChannelBinding, m.CBName)
	}
	return nil
}

// ServerFirst returns the server-first-message for the account's verifier v:
// the combined nonce, v's salt and v's iteration count (the stored count, even
// if the server's minimum has risen since registration).
func (s *Server) ServerFirst(v Verifier) (string, error) {
	if s.state != serverReadFirst {
		return "", ErrState
	}
	s.state = serverFailed
	if len(v.Salt) == 0 || len(v.Salt) > MaxSaltLen {
		return "", fmt.Errorf("%w (got %d bytes)", ErrBadVerifier, len(v.Salt))
	}
	if err := checkIterations(v.Iterations, 1, MaxIterations); err != nil {
		return "", err
	}
	sn, err := newNonce(s.cfg.Rand)
	if err != nil {
		return "", err
	}
	s.verifier = v
	s.nonce = s.first.Nonce + sn
	sf := ServerFirst{Nonce: s.nonce, Salt: v.Salt, Iterations: v.Iterations}
	s.serverFirst = sf.String()
	s.state = serverSentFirst
	return s.serverFirst, nil
}

// ReadClientFinal verifies the client-final-message. It always returns a
// server-final-message: "v=…" with a nil error when the proof verifies, or
// "e=…" with ErrMalformed, ErrChannelBinding, ErrNonce or ErrAuthFailed. A
// caller that must not reveal why a login failed sends its own error instead.
func (s *Server) ReadClientFinal(msg string) (string, error) {
	if s.state != serverSentFirst {
		return "e=other-error", ErrState
	}
	s.state = serverFailed
	m, err := ParseClientFinal(msg)
	if err != nil {
		return "e=invalid-encoding", err
	}
	want := channelBindingAttr(s.gs2, s.cfg.ChannelBinding)
	if subtle.ConstantTimeCompare(m.ChannelBinding, want) != 1 {
		return "e=channel-bindings-dont-match", ErrChannelBinding
	}
	if subtle.ConstantTimeCompare([]byte(m.Nonce), []byte(s.nonce)) != 1 {
		return "e=other-error", ErrNonce
	}
	authMessage := s.first.Bare() + "," + s.serverFirst + "," + m.WithoutProof()
	clientSig := hmacSum(s.verifier.StoredKey[:], authMessage)
	var clientKey [KeyLen]byte
	for i := range clientKey {
		clientKey[i] = m.Proof[i] ^ clientSig[i]
	}
	stored := sha256.Sum256(clientKey[:])
	if !hmac.Equal(stored[:], s.verifier.StoredKey[:]) {
		return "e=invalid-proof", ErrAuthFailed
	}
	sf := ServerFinal{Signature: hmacSum(s.verifier.ServerKey[:], authMessage)}
	s.state = serverDone
	return sf.String(), nil
}
