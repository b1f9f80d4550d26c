package discovery

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Wire constants of §12.
const (
	// DefaultPort is the discovery port the host uses unless configured.
	DefaultPort = 27016
	// Version is the discovery wire version this package speaks.
	Version = 1
	// QuerySize is the exact size of a query datagram.
	QuerySize = 64
	// MaxTextLen bounds the name and the map, in bytes.
	MaxTextLen = 64
	// MinAnswerSize is an answer with an empty name and map.
	MinAnswerSize = answerFixed + 2 + 2
	// MaxAnswerSize is an answer with a 64-byte name and map. It stays below
	// 3×QuerySize, the anti-amplification bound of §12.
	MaxAnswerSize = answerFixed + 2 + MaxTextLen + 2 + MaxTextLen

	headerSize  = 4 + 1 + 8
	answerFixed = headerSize + 2 + 2 + 2 + 2 + 1
)

// The bound is a promise of the protocol, checked at compile time.
var _ [3*QuerySize - MaxAnswerSize]struct{}

var (
	queryMagic  = [4]byte{'S', 'P', 'K', 'Q'}
	answerMagic = [4]byte{'S', 'P', 'K', 'A'}
)

// Errors of the codec. Parse errors wrap ErrMalformed or ErrVersion, so a
// caller tells "not ours or broken" from "ours but another version".
var (
	ErrMalformed = errors.New("discovery: malformed datagram")
	ErrVersion   = errors.New("discovery: unsupported discovery version")
	// ErrInfo: AppendAnswer was given an Info it cannot announce.
	ErrInfo = errors.New("discovery: invalid server info")
)

// Nonce ties an answer to its query. Query draws it from crypto/rand, so an
// off-path host cannot forge an answer it has not seen the query of.
type Nonce [8]byte

// Info is what a server announces: metadata only, never a secret.
type Info struct {
	Name            string // ≤ 64 bytes of text (see the package doc)
	Map             string // ≤ 64 bytes of text, may be empty
	Mode            uint8  // GameMode byte of §9
	Players         uint16 // admitted clients, ≤ MaxPlayers
	MaxPlayers      uint16 // client slots
	GamePort        uint16 // UDP port of the game server; never 0
	ProtocolVersion uint16 // the newest game protocol version the server speaks (4, or 3)
}

// AppendQuery appends the 64-byte query carrying nonce to dst.
func AppendQuery(dst []byte, nonce Nonce) []byte {
	dst = append(dst, queryMagic[:]...)
	dst = append(dst, Version)
	dst = append(dst, nonce[:]...)
	var pad [QuerySize - headerSize]byte
	return append(dst, pad[:]...)
}

// ParseQuery checks that b is exactly a version-1 query and returns its nonce.
// It reads b in place and does not allocate.
func ParseQuery(b []byte) (Nonce, error) {
	var n Nonce
	switch {
	case len(b) < headerSize || [4]byte(b[:4]) != queryMagic:
		return n, errNotQuery
	case b[4] != Version:
		return n, errVersion
	case len(b) != QuerySize:
		return n, errQuerySize
	}
	for _, c := range b[headerSize:] {
		if c != 0 {
			return n, errPadding
		}
	}
	copy(n[:], b[5:headerSize])
	return n, nil
}

// AppendAnswer appends the answer to the query with nonce, describing info, to
// dst. It never fails on text: invalid UTF-8 and forbidden characters become
// U+FFFD and text is cut to 64 bytes at a character boundary. Players above
// MaxPlayers are announced as MaxPlayers. A GamePort of 0 is ErrInfo. The
// result is at most MaxAnswerSize bytes; with a dst of that capacity it does
// not allocate.
func AppendAnswer(dst []byte, nonce Nonce, info Info) ([]byte, error) {
	if info.GamePort == 0 {
		return dst, fmt.Errorf("%w: game port 0", ErrInfo)
	}
	dst = append(dst, answerMagic[:]...)
	dst = append(dst, Version)
	dst = append(dst, nonce[:]...)
	dst = binary.LittleEndian.AppendUint16(dst, info.ProtocolVersion)
	dst = binary.LittleEndian.AppendUint16(dst, info.GamePort)
	dst = binary.LittleEndian.AppendUint16(dst, min(info.Players, info.MaxPlayers))
	dst = binary.LittleEndian.AppendUint16(dst, info.MaxPlayers)
	dst = append(dst, info.Mode)
	dst = appendText(dst, info.Name)
	dst = appendText(dst, info.Map)
	return dst, nil
}

// ParseAnswer checks that b is exactly a version-1 answer and returns its nonce
// and Info. Every length is checked against the datagram before anything is
// copied; the strings are the only allocation.
func ParseAnswer(b []byte) (Nonce, Info, error) {
	var n Nonce
	var info Info
	switch {
	case len(b) < headerSize || [4]byte(b[:4]) != answerMagic:
		return n, info, errNotAnswer
	case b[4] != Version:
		return n, info, errVersion
	case len(b) < MinAnswerSize || len(b) > MaxAnswerSize:
		return n, info, errAnswerSize
	}
	copy(n[:], b[5:headerSize])
	le := binary.LittleEndian
	info.ProtocolVersion = le.Uint16(b[13:])
	info.GamePort = le.Uint16(b[15:])
	info.Players = le.Uint16(b[17:])
	info.MaxPlayers = le.Uint16(b[19:])
	info.Mode = b[21]
	switch {
	case info.GamePort == 0:
		return n, Info{}, errGamePort
	case info.Players > info.MaxPlayers:
		return n, Info{}, errPlayers
	}
	rest := b[answerFixed:]
	name, rest, ok := readText(rest)
	if !ok {
		return n, Info{}, errName
	}
	mapName, rest, ok := readText(rest)
	if !ok {
		return n, Info{}, errMap
	}
	if len(rest) != 0 {
		return n, Info{}, errTrailing
	}
	info.Name, info.Map = string(name), string(mapName)
	return n, info, nil
}

// The parse errors are made once: a flood of bad datagrams allocates nothing.
var (
	errVersion    = fmt.Errorf("%w: expected version %d", ErrVersion, Version)
	errNotQuery   = fmt.Errorf("%w: not a query (magic SPKQ)", ErrMalformed)
	errQuerySize  = fmt.Errorf("%w: a query is exactly %d bytes", ErrMalformed, QuerySize)
	errPadding    = fmt.Errorf("%w: query padding is not zero", ErrMalformed)
	errNotAnswer  = fmt.Errorf("%w: not an answer (magic SPKA)", ErrMalformed)
	errAnswerSize = fmt.Errorf("%w: an answer is %d..%d bytes", ErrMalformed, MinAnswerSize, MaxAnswerSize)
	errGamePort   = fmt.Errorf("%w: game port 0", ErrMalformed)
	errPlayers    = fmt.Errorf("%w: players above max_players", ErrMalformed)
	errName       = fmt.Errorf("%w: name is not text of at most %d bytes", ErrMalformed, MaxTextLen)
	errMap        = fmt.Errorf("%w: map is not text of at most %d bytes", ErrMalformed, MaxTextLen)
	errTrailing   = fmt.Errorf("%w: bytes after the map", ErrMalformed)
)

// readText splits a str off b: length, bounds, then content.
func readText(b []byte) (text, rest []byte, ok bool) {
	if len(b) < 2 {
		return nil, nil, false
	}
	n := int(binary.LittleEndian.Uint16(b))
	b = b[2:]
	if n > MaxTextLen || n > len(b) || !validText(b[:n]) {
		return nil, nil, false
	}
	return b[:n], b[n:], true
}

// validText reports whether b is text of §12: UTF-8 with no forbidden rune.
func validText(b []byte) bool {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if (r == utf8.RuneError && size == 1) || forbidden(r) {
			return false
		}
		b = b[size:]
	}
	return true
}

// forbidden: control characters and the bidirectional formatting characters
// that could reorder a terminal line.
func forbidden(r rune) bool {
	return r < 0x20 || (r >= 0x7F && r <= 0x9F) ||
		(r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
}

// appendText appends s as a str, replacing what validText refuses with U+FFFD
// and stopping before the rune that would pass MaxTextLen bytes.
func appendText(dst []byte, s string) []byte {
	at := len(dst)
	dst = append(dst, 0, 0)
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || forbidden(r) {
			r = utf8.RuneError
		}
		w := utf8.RuneLen(r)
		if n+w > MaxTextLen {
			break
		}
		dst = utf8.AppendRune(dst, r)
		n += w
		i += size
	}
	binary.LittleEndian.PutUint16(dst[at:], uint16(n))
	return dst
}
