package policy

import (
	"errors"
	"strconv"
)

// Sentinel errors, one per reason §11 names. Parse wraps exactly one of them in a
// *ParseError, so callers match with errors.Is and print the wrapped error, which
// names the input, the reason and what to write instead.
var (
	// ErrNotCanonical: the text is not canonical dotted-decimal IPv4 with an
	// optional canonical decimal prefix (leading zeros, shorthand such as 127.1,
	// hex or octal octets, white space, empty octets, a trailing dot, a signed or
	// zero-padded prefix, a port).
	ErrNotCanonical = errors.New("not a canonical IPv4 address")
	// ErrHostname: the text is a host name. Names are never resolved, because
	// what a name resolves to can change after the policy was checked.
	ErrHostname = errors.New("host names are not resolved")
	// ErrIPv6: any IPv6 address, including IPv4-mapped ones and ::1.
	ErrIPv6 = errors.New("IPv6 address not allowed")
	// ErrWildcard: 0.0.0.0, which would expose the server on every interface.
	ErrWildcard = errors.New("wildcard address not allowed")
	// ErrLimitedBroadcast: 255.255.255.255.
	ErrLimitedBroadcast = errors.New("limited broadcast address not allowed")
	// ErrMulticast: 224.0.0.0/4.
	ErrMulticast = errors.New("multicast address not allowed")
	// ErrReserved: other special-purpose space that is neither a host nor a LAN
	// (0.0.0.0/8 "this network", 192.0.0.0/24 IETF assignments, 240.0.0.0/4).
	ErrReserved = errors.New("reserved address not allowed")
	// ErrDocumentation: the documentation nets 192.0.2.0/24, 198.51.100.0/24,
	// 203.0.113.0/24 and the benchmarking net 198.18.0.0/15.
	ErrDocumentation = errors.New("documentation/test network not allowed")
	// ErrCGNAT: the carrier-grade NAT shared space 100.64.0.0/10.
	ErrCGNAT = errors.New("carrier-grade NAT address (100.64.0.0/10) not allowed")
	// ErrLinkLocal: 169.254.0.0/16.
	ErrLinkLocal = errors.New("link-local address (169.254.0.0/16) not allowed")
	// ErrPublic: a globally routable address. The server is for loopback and LAN
	// play only.
	ErrPublic = errors.New("public address not allowed")
	// ErrLoopbackPrefix: a loopback address written with a prefix. The loopback
	// policy always admits 127.0.0.0/8, so a prefix could only mislead.
	ErrLoopbackPrefix = errors.New("loopback address takes no prefix")
	// ErrMissingPrefix: an RFC1918 address without /N; the prefix says which
	// peers are admitted, so it cannot be guessed.
	ErrMissingPrefix = errors.New("LAN address needs a prefix")
	// ErrPrefixRange: a prefix length outside 8..30.
	ErrPrefixRange = errors.New("prefix length outside 8..30")
	// ErrNotPrivate: an RFC1918 host whose subnet reaches outside its RFC1918
	// block (for example 172.16.0.1/8).
	ErrNotPrivate = errors.New("subnet not wholly inside RFC1918")
	// ErrNetworkOrBroadcast: the host is its subnet's network or broadcast
	// address (for loopback: 127.0.0.0 or 127.255.255.255).
	ErrNetworkOrBroadcast = errors.New("network or broadcast address is not a host")
)

// hintGeneric tells the user what the policy does accept.
const hintGeneric = "bind to 127.0.0.1 or a LAN host/prefix like 192.168.1.20/24"

// ParseError is the error Parse returns. Its message has the form
//
//	policy: "<input>": <reason>[: <detail>]; <what to do>
//
// and it unwraps to one of the Err* sentinels.
type ParseError struct {
	Input  string // the text given to Parse, verbatim
	Err    error  // one of the Err* sentinels
	Detail string // what exactly is wrong, may be empty
	Hint   string // what to write instead
}

// Error implements error.
func (e *ParseError) Error() string {
	s := "policy: " + strconv.Quote(e.Input) + ": " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Unwrap returns the sentinel.
func (e *ParseError) Unwrap() error { return e.Err }

func reject(input string, why error, detail, hint string) error {
	return &ParseError{Input: input, Err: why, Detail: detail, Hint: hint}
}
