package scram

import (
	"encoding/base64"
	"errors"
	"strings"
	"unicode/utf8"
)

// The four messages of RFC 5802 §7 in their text syntax. ParseXxx accepts
// exactly the canonical form that String produces (see the package comment),
// so parse and print round-trip byte for byte.

// Message limits, in bytes.
const (
	// MaxMessageLen bounds every SCRAM message; longer input is refused before
	// it is looked at.
	MaxMessageLen = 512
	// MaxUsernameLen bounds a decoded username or authzid.
	MaxUsernameLen = 64
	// MaxNonceLen bounds a nonce: the client's part, or both parts together.
	MaxNonceLen = 128
	// maxCBNameLen bounds a cb-name.
	maxCBNameLen = 32
	// maxCBDataLen bounds the decoded c= attribute (gs2 header + cbind data).
	maxCBDataLen = 256
	// maxServerErrorLen bounds a server-error-value.
	maxServerErrorLen = 64
)

// ErrMalformed is matched by every parse error.
var ErrMalformed = errors.New("scram: malformed message")

// parseError is a malformed message with the rule it broke; built once so the
// parsers do not allocate an error per failure.
type parseError struct{ rule string }

func (e *parseError) Error() string        { return "scram: malformed message: " + e.rule }
func (e *parseError) Is(target error) bool { return target == ErrMalformed }

var (
	errTooLong    = &parseError{"longer than 512 bytes"}
	errAttr       = &parseError{"attribute missing, out of order, or not the one expected"}
	errGS2        = &parseError{"gs2 header is not n,, y,, or p=NAME,, with an optional a=authzid"}
	errSASLName   = &parseError{"username or authzid is empty, too long, not UTF-8, or has a bad =XX escape"}
	errNonceChars = &parseError{"nonce is empty, too long, or has a character outside printable ASCII without ','"}
	errBase64     = &parseError{"value is not canonical padded base64 of the expected size"}
	errIterations = &parseError{"iteration count is not a positive decimal without leading zeros below 2^31"}
	errTrailing   = &parseError{"trailing attributes (extensions are not supported)"}
	errReserved   = &parseError{"reserved attribute m= (mandatory extension) is not supported"}
	errServerErr  = &parseError{"server-error value is empty, too long, or has ',' or '='"}
	errCBName     = &parseError{"cb-name is empty, too long, or not [A-Za-z0-9.-]"}
)

// Channel-binding flags of the gs2 header.
const (
	CBNone        = 'n' // client does not support channel binding
	CBUnsupported = 'y' // client supports it but thinks the server does not
	CBUsed        = 'p' // client requires channel binding of type CBName
)

// ClientFirst is a client-first-message:
// gs2-header client-first-message-bare = CBFlag[=CBName] "," [a=AuthzID] "," n=Username,r=Nonce.
type ClientFirst struct {
	CBFlag   byte   // CBNone, CBUnsupported or CBUsed
	CBName   string // with CBUsed only
	AuthzID  string // decoded; empty when absent
	Username string // decoded saslname
	Nonce    string // the client nonce
}

// GS2Header returns the gs2 header, e.g. "p=sparkhost-th,,".
func (m *ClientFirst) GS2Header() string {
	var b strings.Builder
	b.WriteByte(m.CBFlag)
	if m.CBFlag == CBUsed {
		b.WriteByte('=')
		b.WriteString(m.CBName)
	}
	b.WriteByte(',')
	if m.AuthzID != "" {
		b.WriteString("a=")
		b.WriteString(escapeSASLName(m.AuthzID))
	}
	b.WriteByte(',')
	return b.String()
}

// Bare returns the client-first-message-bare: "n=Username,r=Nonce".
func (m *ClientFirst) Bare() string {
	return "n=" + escapeSASLName(m.Username) + ",r=" + m.Nonce
}

// String returns the message: GS2Header() + Bare().
func (m *ClientFirst) String() string { return m.GS2Header() + m.Bare() }

// ParseClientFirst parses a client-first-message.
func ParseClientFirst(s string) (ClientFirst, error) {
	if len(s) > MaxMessageLen {
		return ClientFirst{}, errTooLong
	}
	var m ClientFirst
	rest, err := parseGS2(s, &m)
	if err != nil {
		return ClientFirst{}, err
	}
	attrs := attrReader{s: rest}
	if attrs.peek() == 'm' {
		return ClientFirst{}, errReserved
	}
	user, ok := attrs.next('n')
	if !ok {
		return ClientFirst{}, errAttr
	}
	if m.Username, ok = unescapeSASLName(user); !ok {
		return ClientFirst{}, errSASLName
	}
	nonce, ok := attrs.next('r')
	if !ok {
		return ClientFirst{}, errAttr
	}
	if !validNonce(nonce) {
		return ClientFirst{}, errNonceChars
	}
	m.Nonce = nonce
	if !attrs.done() {
		return ClientFirst{}, errTrailing
	}
	return m, nil
}

// parseGS2 parses the gs2 header at the start of s into m and returns the rest.
func parseGS2(s string, m *ClientFirst) (string, error) {
	flag, rest, ok := strings.Cut(s, ",")
	if !ok {
		return "", errGS2
	}
	switch {
	case flag == "n" || flag == "y":
		m.CBFlag = flag[0]
	case strings.HasPrefix(flag, "p="):
		if !validCBName(flag[2:]) {
			return "", errCBName
		}
		m.CBFlag, m.CBName = CBUsed, flag[2:]
	default:
		return "", errGS2
	}
	authz, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return "", errGS2
	}
	if authz != "" {
		if !strings.HasPrefix(authz, "a=") {
			return "", errGS2
		}
		if m.AuthzID, ok = unescapeSASLName(authz[2:]); !ok {
			return "", errSASLName
		}
	}
	return rest, nil
}

// ServerFirst is a server-first-message: r=Nonce,s=base64(Salt),i=Iterations,
// where Nonce is the client nonce followed by the server's.
type ServerFirst struct {
	Nonce      string
	Salt       []byte
	Iterations int
}

// String returns the message.
func (m *ServerFirst) String() string {
	return "r=" + m.Nonce + ",s=" + base64.StdEncoding.EncodeToString(m.Salt) + ",i=" + itoa(m.Iterations)
}

// ParseServerFirst parses a server-first-message. The salt must decode to
// 1..MaxSaltLen bytes; the iteration count to 1..2^31−1 (the client applies
// its own bounds).
func ParseServerFirst(s string) (ServerFirst, error) {
	if len(s) > MaxMessageLen {
		return ServerFirst{}, errTooLong
	}
	attrs := attrReader{s: s}
	if attrs.peek() == 'm' {
		return ServerFirst{}, errReserved
	}
	var m ServerFirst
	nonce, ok := attrs.next('r')
	if !ok {
		return ServerFirst{}, errAttr
	}
	if !validNonce(nonce) {
		return ServerFirst{}, errNonceChars
	}
	salt, ok := attrs.next('s')
	if !ok {
		return ServerFirst{}, errAttr
	}
	if m.Salt, ok = decodeBase64(salt, 1, MaxSaltLen); !ok {
		return ServerFirst{}, errBase64
	}
	iter, ok := attrs.next('i')
	if !ok {
		return ServerFirst{}, errAttr
	}
	if m.Iterations, ok = atoi(iter); !ok {
		return ServerFirst{}, errIterations
	}
	if !attrs.done() {
		return ServerFirst{}, errTrailing
	}
	m.Nonce = nonce
	return m, nil
}

// ClientFinal is a client-final-message:
// c=base64(ChannelBinding),r=Nonce,p=base64(Proof).
type ClientFinal struct {
	ChannelBinding []byte // gs2 header ‖ cbind data
	Nonce          string
	Proof          [KeyLen]byte
}

// WithoutProof returns client-final-message-without-proof, the third part of
// the AuthMessage.
func (m *ClientFinal) WithoutProof() string {
	return "c=" + base64.StdEncoding.EncodeToString(m.ChannelBinding) + ",r=" + m.Nonce
}

// String returns the message.
func (m *ClientFinal) String() string {
	return m.WithoutProof() + ",p=" + base64.StdEncoding.EncodeToString(m.Proof[:])
}

// ParseClientFinal parses a client-final-message. The c= attribute must
// decode to 1..256 bytes and the proof to exactly KeyLen bytes.
func ParseClientFinal(s string) (ClientFinal, error) {
	if len(s) > MaxMessageLen {
		return ClientFinal{}, errTooLong
	}
	attrs := attrReader{s: s}
	var m ClientFinal
	cb, ok := attrs.next('c')
	if !ok {
		return ClientFinal{}, errAttr
	}
	if m.ChannelBinding, ok = decodeBase64(cb, 1, maxCBDataLen); !ok {
		return ClientFinal{}, errBase64
	}
	nonce, ok := attrs.next('r')
	if !ok {
		return ClientFinal{}, errAttr
	}
	if !validNonce(nonce) {
		return ClientFinal{}, errNonceChars
	}
	proof, ok := attrs.next('p')
	if !ok {
		return ClientFinal{}, errAttr
	}
	p, ok := decodeBase64(proof, KeyLen, KeyLen)
	if !ok {
		return ClientFinal{}, errBase64
	}
	if !attrs.done() {
		return ClientFinal{}, errTrailing
	}
	copy(m.Proof[:], p)
	m.Nonce = nonce
	return m, nil
}

// ServerFinal is a server-final-message: v=base64(Signature) on success, or
// e=Error.
type ServerFinal struct {
	Error     string // a server-error-value; empty on success
	Signature [KeyLen]byte
}

// String returns the message.
func (m *ServerFinal) String() string {
	if m.Error != "" {
		return "e=" + m.Error
	}
	return "v=" + base64.StdEncoding.EncodeToString(m.Signature[:])
}

// ParseServerFinal parses a server-final-message.
func ParseServerFinal(s string) (ServerFinal, error) {
	if len(s) > MaxMessageLen {
		return ServerFinal{}, errTooLong
	}
	attrs := attrReader{s: s}
	var m ServerFinal
	switch attrs.peek() {
	case 'e':
		v, _ := attrs.next('e')
		if !validServerError(v) {
			return ServerFinal{}, errServerErr
		}
		m.Error = v
	case 'v':
		v, _ := attrs.next('v')
		sig, ok := decodeBase64(v, KeyLen, KeyLen)
		if !ok {
			return ServerFinal{}, errBase64
		}
		copy(m.Signature[:], sig)
	default:
		return ServerFinal{}, errAttr
	}
	if !attrs.done() {
		return ServerFinal{}, errTrailing
	}
	return m, nil
}

// attrReader walks the comma-separated "x=value" attributes of a message.
type attrReader struct {
	s   string
	end bool // s is exhausted
}

// peek returns the name of the next attribute, or 0.
func (a *attrReader) peek() byte {
	if a.end || len(a.s) < 2 || a.s[1] != '=' {
		return 0
	}
	return a.s[0]
}

// next reads the next attribute, which must be named name, and returns its value.
func (a *attrReader) next(name byte) (string, bool) {
	if a.peek() != name {
		return "", false
	}
	v, rest, more := strings.Cut(a.s[2:], ",")
	a.s, a.end = rest, !more
	return v, true
}

// done reports whether every attribute was read.
func (a *attrReader) done() bool { return a.end }

func validNonce(s string) bool {
	if len(s) == 0 || len(s) > MaxNonceLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7E || c == ',' {
			return false
		}
	}
	return true
}

func validCBName(s string) bool {
	if len(s) == 0 || len(s) > maxCBNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func validServerError(s string) bool {
	if len(s) == 0 || len(s) > maxServerErrorLen || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexAny(s, ",=\x00") < 0
}

// escapeSASLName applies RFC 5802's saslname escaping: ',' → "=2C", '=' → "=3D".
func escapeSASLName(s string) string {
	if strings.IndexAny(s, ",=") < 0 {
		return s
	}
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

// unescapeSASLName decodes a saslname: 1..MaxUsernameLen bytes once decoded,
// valid UTF-8 without NUL, '=' only in "=2C" and "=3D".
func unescapeSASLName(s string) (string, bool) {
	if len(s) == 0 || len(s) > 3*MaxUsernameLen || !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return "", false
	}
	if strings.IndexByte(s, '=') < 0 {
		return s, len(s) <= MaxUsernameLen
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	if b.Len() > MaxUsernameLen {
		return "", false
	}
	return b.String(), true
}

// decodeBase64 decodes canonical padded base64 of minLen..maxLen bytes; the
// encoded length is checked before anything is allocated.
func decodeBase64(s string, minLen, maxLen int) ([]byte, bool) {
	// encoding/base64 skips CR and LF even in Strict mode: refuse them, so
	// that one value has one encoding.
	if len(s) == 0 || len(s)%4 != 0 || len(s) > base64.StdEncoding.EncodedLen(maxLen) || strings.ContainsAny(s, "\r\n") {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) < minLen || len(b) > maxLen {
		return nil, false
	}
	return b, true
}

// atoi parses a posit-number (RFC 5802: %x31-39 *DIGIT) below 2^31.
func atoi(s string) (int, bool) {
	if len(s) == 0 || len(s) > 10 || s[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n > 1<<31-1 {
		return 0, false
	}
	return n, true
}

func itoa(n int) string {
	if n <= 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return string(buf[i:])
}
