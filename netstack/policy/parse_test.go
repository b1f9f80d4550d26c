package policy

import (
	"errors"
	"net/netip"
	"testing"
)

// Hints shared by many refusals; the table spells out everything else.
const (
	hintGen = "; bind to 127.0.0.1 or a LAN host/prefix like 192.168.1.20/24"
	hintCan = "; write canonical dotted-decimal IPv4 such as 127.0.0.1 or 192.168.1.20/24"
)

// rejectCases covers every refusal reason of §11, each with its sentinel and
// its exact message (the message is user-facing, so it is part of the contract).
var rejectCases = []struct {
	in  string
	err error
	msg string
}{
	{in: "0.0.0.0", err: ErrWildcard,
		msg: `policy: "0.0.0.0": wildcard address not allowed` + hintGen},
	{in: "0.1.2.3", err: ErrReserved,
		msg: `policy: "0.1.2.3": reserved address not allowed: 0.0.0.0/8 means "this network"` + hintGen},
	{in: "255.255.255.255", err: ErrLimitedBroadcast,
		msg: `policy: "255.255.255.255": limited broadcast address not allowed` + hintGen},
	{in: "224.0.0.1", err: ErrMulticast,
		msg: `policy: "224.0.0.1": multicast address not allowed` + hintGen},
	{in: "239.255.255.250", err: ErrMulticast,
		msg: `policy: "239.255.255.250": multicast address not allowed` + hintGen},
	{in: "240.0.0.1", err: ErrReserved,
		msg: `policy: "240.0.0.1": reserved address not allowed: 240.0.0.0/4 is reserved` + hintGen},
	{in: "8.8.8.8", err: ErrPublic,
		msg: `policy: "8.8.8.8": public address not allowed: sparkhost serves loopback and LAN peers only` + hintGen},
	{in: "1.1.1.1/24", err: ErrPublic,
		msg: `policy: "1.1.1.1/24": public address not allowed: sparkhost serves loopback and LAN peers only` + hintGen},
	{in: "172.15.255.1/16", err: ErrPublic,
		msg: `policy: "172.15.255.1/16": public address not allowed: sparkhost serves loopback and LAN peers only` + hintGen},
	{in: "172.32.0.1/16", err: ErrPublic,
		msg: `policy: "172.32.0.1/16": public address not allowed: sparkhost serves loopback and LAN peers only` + hintGen},
	{in: "192.0.2.1", err: ErrDocumentation,
		msg: `policy: "192.0.2.1": documentation/test network not allowed: 192.0.2.0/24 (TEST-NET-1) is for documentation` + hintGen},
	{in: "198.51.100.7", err: ErrDocumentation,
		msg: `policy: "198.51.100.7": documentation/test network not allowed: 198.51.100.0/24 (TEST-NET-2) is for documentation` + hintGen},
	{in: "203.0.113.9", err: ErrDocumentation,
		msg: `policy: "203.0.113.9": documentation/test network not allowed: 203.0.113.0/24 (TEST-NET-3) is for documentation` + hintGen},
	{in: "198.18.0.1", err: ErrDocumentation,
		msg: `policy: "198.18.0.1": documentation/test network not allowed: 198.18.0.0/15 is for benchmarking` + hintGen},
	{in: "198.19.255.254", err: ErrDocumentation,
		msg: `policy: "198.19.255.254": documentation/test network not allowed: 198.18.0.0/15 is for benchmarking` + hintGen},
	{in: "192.0.0.8", err: ErrReserved,
		msg: `policy: "192.0.0.8": reserved address not allowed: 192.0.0.0/24 is for IETF protocol assignments` + hintGen},
	{in: "100.64.0.1", err: ErrCGNAT,
		msg: `policy: "100.64.0.1": carrier-grade NAT address (100.64.0.0/10) not allowed` + hintGen},
	{in: "100.127.255.254", err: ErrCGNAT,
		msg: `policy: "100.127.255.254": carrier-grade NAT address (100.64.0.0/10) not allowed` + hintGen},
	{in: "169.254.1.1", err: ErrLinkLocal,
		msg: `policy: "169.254.1.1": link-local address (169.254.0.0/16) not allowed` + hintGen},
	{in: "::1", err: ErrIPv6,
		msg: `policy: "::1": IPv6 address not allowed; sparkhost speaks IPv4 only` + hintGen},
	{in: "::ffff:127.0.0.1", err: ErrIPv6,
		msg: `policy: "::ffff:127.0.0.1": IPv6 address not allowed: IPv4-mapped address; write the IPv4 form 127.0.0.1 (IPv4 only)`},
	{in: "[::1]", err: ErrIPv6,
		msg: `policy: "[::1]": IPv6 address not allowed; sparkhost speaks IPv4 only` + hintGen},
	{in: "fe80::1%eth0", err: ErrIPv6,
		msg: `policy: "fe80::1%eth0": IPv6 address not allowed; sparkhost speaks IPv4 only` + hintGen},
	{in: "2001:db8::1/64", err: ErrIPv6,
		msg: `policy: "2001:db8::1/64": IPv6 address not allowed; sparkhost speaks IPv4 only` + hintGen},
	{in: "127.0.0.1:27015", err: ErrNotCanonical,
		msg: `policy: "127.0.0.1:27015": not a canonical IPv4 address: contains a port; give the address alone (127.0.0.1); the port is configured separately`},
	{in: "127.000.0.1", err: ErrNotCanonical,
		msg: `policy: "127.000.0.1": not a canonical IPv4 address: octet "000" has a leading zero (zero-padded and octal forms are not allowed)` + hintCan},
	{in: "127.1", err: ErrNotCanonical,
		msg: `policy: "127.1": not a canonical IPv4 address: 2 octets, want 4 (shorthand like 127.1 is not allowed)` + hintCan},
	{in: "0x7f.0.0.1", err: ErrNotCanonical,
		msg: `policy: "0x7f.0.0.1": not a canonical IPv4 address: hexadecimal octet "0x7f"` + hintCan},
	{in: "0X7F.0.0.1", err: ErrNotCanonical,
		msg: `policy: "0X7F.0.0.1": not a canonical IPv4 address: hexadecimal octet "0X7F"` + hintCan},
	{in: "0177.0.0.1", err: ErrNotCanonical,
		msg: `policy: "0177.0.0.1": not a canonical IPv4 address: octet "0177" has a leading zero (zero-padded and octal forms are not allowed)` + hintCan},
	{in: " 127.0.0.1", err: ErrNotCanonical,
		msg: `policy: " 127.0.0.1": not a canonical IPv4 address: contains white space; write it as e.g. 127.0.0.1, without spaces`},
	{in: "127.0.0.1\n", err: ErrNotCanonical,
		msg: `policy: "127.0.0.1\n": not a canonical IPv4 address: contains white space; write it as e.g. 127.0.0.1, without spaces`},
	{in: "127..0.1", err: ErrNotCanonical,
		msg: `policy: "127..0.1": not a canonical IPv4 address: empty octet` + hintCan},
	{in: ".127.0.0.1", err: ErrNotCanonical,
		msg: `policy: ".127.0.0.1": not a canonical IPv4 address: leading dot` + hintCan},
	{in: "127.0.0.1.", err: ErrNotCanonical,
		msg: `policy: "127.0.0.1.": not a canonical IPv4 address: trailing dot` + hintCan},
	{in: "127.0.0.1.5", err: ErrNotCanonical,
		msg: `policy: "127.0.0.1.5": not a canonical IPv4 address: 5 octets, want 4 (shorthand like 127.1 is not allowed)` + hintCan},
	{in: "256.0.0.1", err: ErrNotCanonical,
		msg: `policy: "256.0.0.1": not a canonical IPv4 address: octet "256" is greater than 255` + hintCan},
	{in: "1270.0.0.1", err: ErrNotCanonical,
		msg: `policy: "1270.0.0.1": not a canonical IPv4 address: octet "1270" is greater than 255` + hintCan},
	{in: "192.168.1.20/024", err: ErrNotCanonical,
		msg: `policy: "192.168.1.20/024": not a canonical IPv4 address: prefix "/024" has a leading zero` + hintCan},
	{in: "192.168.1.20/+24", err: ErrNotCanonical,
		msg: `policy: "192.168.1.20/+24": not a canonical IPv4 address: prefix "/+24" is not a plain decimal number` + hintCan},
	{in: "192.168.1.20/-1", err: ErrNotCanonical,
		msg: `policy: "192.168.1.20/-1": not a canonical IPv4 address: prefix "/-1" is not a plain decimal number` + hintCan},
	{in: "192.168.1.20/", err: ErrNotCanonical,
		msg: `policy: "192.168.1.20/": not a canonical IPv4 address: empty prefix after '/'` + hintCan},
	{in: "/24", err: ErrNotCanonical,
		msg: `policy: "/24": not a canonical IPv4 address: no address before the prefix` + hintCan},
	{in: "192.168.1.20/24/8", err: ErrNotCanonical,
		msg: `policy: "192.168.1.20/24/8": not a canonical IPv4 address: prefix "/24/8" is not a plain decimal number` + hintCan},
	{in: "localhost", err: ErrHostname,
		msg: `policy: "localhost": host names are not resolved; write the IPv4 address itself, e.g. 127.0.0.1 (for "localhost") or 192.168.1.20/24`},
	{in: "my-server.lan", err: ErrHostname,
		msg: `policy: "my-server.lan": host names are not resolved; write the IPv4 address itself, e.g. 127.0.0.1 (for "localhost") or 192.168.1.20/24`},
	{in: "127.0.0.1a", err: ErrHostname,
		msg: `policy: "127.0.0.1a": host names are not resolved; write the IPv4 address itself, e.g. 127.0.0.1 (for "localhost") or 192.168.1.20/24`},
	{in: "127.0.0.-1", err: ErrNotCanonical,
		msg: `policy: "127.0.0.-1": not a canonical IPv4 address: unexpected character '-'` + hintCan},
	{in: "127.0.0.1_", err: ErrNotCanonical,
		msg: `policy: "127.0.0.1_": not a canonical IPv4 address: unexpected character '_'` + hintCan},
	{in: "192.168.1.20", err: ErrMissingPrefix,
		msg: `policy: "192.168.1.20": LAN address needs a prefix; add the LAN's prefix length, e.g. 192.168.1.20/24`},
	{in: "10.1.2.3", err: ErrMissingPrefix,
		msg: `policy: "10.1.2.3": LAN address needs a prefix; add the LAN's prefix length, e.g. 10.1.2.3/24`},
	{in: "172.16.5.4", err: ErrMissingPrefix,
		msg: `policy: "172.16.5.4": LAN address needs a prefix; add the LAN's prefix length, e.g. 172.16.5.4/24`},
	{in: "192.168.1.20/7", err: ErrPrefixRange,
		msg: `policy: "192.168.1.20/7": prefix length outside 8..30: /7; use a prefix length from /8 to /30, e.g. 192.168.1.20/24`},
	{in: "192.168.1.20/31", err: ErrPrefixRange,
		msg: `policy: "192.168.1.20/31": prefix length outside 8..30: /31; use a prefix length from /8 to /30, e.g. 192.168.1.20/24`},
	{in: "192.168.1.20/32", err: ErrPrefixRange,
		msg: `policy: "192.168.1.20/32": prefix length outside 8..30: /32; use a prefix length from /8 to /30, e.g. 192.168.1.20/24`},
	{in: "192.168.1.20/0", err: ErrPrefixRange,
		msg: `policy: "192.168.1.20/0": prefix length outside 8..30: /0; use a prefix length from /8 to /30, e.g. 192.168.1.20/24`},
	{in: "192.168.1.20/1000", err: ErrPrefixRange,
		msg: `policy: "192.168.1.20/1000": prefix length outside 8..30: /1000; use a prefix length from /8 to /30, e.g. 192.168.1.20/24`},
	{in: "172.16.0.1/8", err: ErrNotPrivate,
		msg: `policy: "172.16.0.1/8": subnet not wholly inside RFC1918: 172.0.0.0/8 reaches outside 172.16.0.0/12; use a prefix of /12 or longer`},
	{in: "192.168.1.1/12", err: ErrNotPrivate,
		msg: `policy: "192.168.1.1/12": subnet not wholly inside RFC1918: 192.160.0.0/12 reaches outside 192.168.0.0/16; use a prefix of /16 or longer`},
	{in: "10.0.0.0/8", err: ErrNetworkOrBroadcast,
		msg: `policy: "10.0.0.0/8": network or broadcast address is not a host: 10.0.0.0 is the network address of 10.0.0.0/8; use a host of that subnet, e.g. 10.0.0.1/8`},
	{in: "10.255.255.255/8", err: ErrNetworkOrBroadcast,
		msg: `policy: "10.255.255.255/8": network or broadcast address is not a host: 10.255.255.255 is the broadcast address of 10.0.0.0/8; use a host of that subnet, e.g. 10.255.255.254/8`},
	{in: "192.168.1.0/24", err: ErrNetworkOrBroadcast,
		msg: `policy: "192.168.1.0/24": network or broadcast address is not a host: 192.168.1.0 is the network address of 192.168.1.0/24; use a host of that subnet, e.g. 192.168.1.1/24`},
	{in: "192.168.1.255/24", err: ErrNetworkOrBroadcast,
		msg: `policy: "192.168.1.255/24": network or broadcast address is not a host: 192.168.1.255 is the broadcast address of 192.168.1.0/24; use a host of that subnet, e.g. 192.168.1.254/24`},
	{in: "127.0.0.0", err: ErrNetworkOrBroadcast,
		msg: `policy: "127.0.0.0": network or broadcast address is not a host: 127.0.0.0 is not a host of 127.0.0.0/8; use a loopback host such as 127.0.0.1`},
	{in: "127.255.255.255", err: ErrNetworkOrBroadcast,
		msg: `policy: "127.255.255.255": network or broadcast address is not a host: 127.255.255.255 is not a host of 127.0.0.0/8; use a loopback host such as 127.0.0.1`},
	{in: "127.0.0.1/8", err: ErrLoopbackPrefix,
		msg: `policy: "127.0.0.1/8": loopback address takes no prefix; the loopback policy always admits 127.0.0.0/8; write 127.0.0.1`},
	{in: "127.0.0.1/32", err: ErrLoopbackPrefix,
		msg: `policy: "127.0.0.1/32": loopback address takes no prefix; the loopback policy always admits 127.0.0.0/8; write 127.0.0.1`},
	{in: "127.0.0.1/99", err: ErrLoopbackPrefix,
		msg: `policy: "127.0.0.1/99": loopback address takes no prefix; the loopback policy always admits 127.0.0.0/8; write 127.0.0.1`},
	{in: "127.0.0.1\u00a0", err: ErrNotCanonical,
		msg: `policy: "127.0.0.1\u00a0": not a canonical IPv4 address: contains white space; write it as e.g. 127.0.0.1, without spaces`},
	{in: "[127.0.0.1]", err: ErrNotCanonical,
		msg: `policy: "[127.0.0.1]": not a canonical IPv4 address: unexpected character '['` + hintCan},
	{in: "[::1]:27015", err: ErrIPv6,
		msg: `policy: "[::1]:27015": IPv6 address not allowed; sparkhost speaks IPv4 only` + hintGen},
	{in: "::ffff:192.168.1.20/120", err: ErrIPv6,
		msg: `policy: "::ffff:192.168.1.20/120": IPv6 address not allowed: IPv4-mapped address; write the IPv4 form 192.168.1.20 (IPv4 only)`},
	{in: "127.0.0.1/", err: ErrNotCanonical,
		msg: `policy: "127.0.0.1/": not a canonical IPv4 address: empty prefix after '/'` + hintCan},
}

func TestParseRejects(t *testing.T) {
	for _, tc := range rejectCases {
		t.Run(tc.in, func(t *testing.T) {
			p, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error %v", tc.in, p, tc.err)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("Parse(%q) error %q does not wrap %v", tc.in, err, tc.err)
			}
			if err.Error() != tc.msg {
				t.Errorf("Parse(%q) message\n got %s\nwant %s", tc.in, err, tc.msg)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Input != tc.in {
				t.Errorf("Parse(%q) error is not a *ParseError carrying the input", tc.in)
			}
			if p != (Policy{}) {
				t.Errorf("Parse(%q) returned a non-zero Policy with its error", tc.in)
			}
		})
	}
}

// Each sentinel must be reachable, or §11's "each with its own error" is not met.
func TestEverySentinelUsed(t *testing.T) {
	all := []error{ErrNotCanonical, ErrHostname, ErrIPv6, ErrWildcard, ErrLimitedBroadcast,
		ErrMulticast, ErrReserved, ErrDocumentation, ErrCGNAT, ErrLinkLocal, ErrPublic,
		ErrLoopbackPrefix, ErrMissingPrefix, ErrPrefixRange, ErrNotPrivate, ErrNetworkOrBroadcast}
	for _, s := range all {
		found := false
		for _, tc := range rejectCases {
			found = found || tc.err == s
		}
		if !found {
			t.Errorf("no reject case for %v", s)
		}
	}
}

var acceptCases = []struct {
	in    string
	str   string // String()
	bind  string // BindAddr()
	peers string // Peers()
}{
	{"", "127.0.0.1", "127.0.0.1", "127.0.0.0/8"},
	{"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.0/8"},
	{"127.3.4.5", "127.3.4.5", "127.3.4.5", "127.0.0.0/8"},
	{"127.0.0.255", "127.0.0.255", "127.0.0.255", "127.0.0.0/8"},
	{"127.255.255.254", "127.255.255.254", "127.255.255.254", "127.0.0.0/8"},
	{"10.1.2.3/8", "10.1.2.3/8", "10.1.2.3", "10.0.0.0/8"},
	{"192.168.1.20/24", "192.168.1.20/24", "192.168.1.20", "192.168.1.0/24"},
	{"192.168.0.1/16", "192.168.0.1/16", "192.168.0.1", "192.168.0.0/16"},
	{"172.16.0.1/12", "172.16.0.1/12", "172.16.0.1", "172.16.0.0/12"},
	{"172.31.255.254/12", "172.31.255.254/12", "172.31.255.254", "172.16.0.0/12"},
	{"192.168.1.1/30", "192.168.1.1/30", "192.168.1.1", "192.168.1.0/30"},
	{"10.0.0.2/30", "10.0.0.2/30", "10.0.0.2", "10.0.0.0/30"},
	{"192.168.1.0/23", "192.168.1.0/23", "192.168.1.0", "192.168.0.0/23"},
	{"10.200.0.255/16", "10.200.0.255/16", "10.200.0.255", "10.200.0.0/16"},
}

func TestParseAccepts(t *testing.T) {
	for _, tc := range acceptCases {
		t.Run(tc.in, func(t *testing.T) {
			p, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got := p.String(); got != tc.str {
				t.Errorf("String() = %q, want %q", got, tc.str)
			}
			if got := p.BindAddr(); got != netip.MustParseAddr(tc.bind) {
				t.Errorf("BindAddr() = %v, want %s", got, tc.bind)
			}
			if got := p.Peers(); got != netip.MustParsePrefix(tc.peers) {
				t.Errorf("Peers() = %v, want %s", got, tc.peers)
			}
			if !p.Allows(p.BindAddr()) {
				t.Errorf("policy %v refuses its own bind address", p)
			}
			again, err := Parse(p.String())
			if err != nil || again != p {
				t.Errorf("Parse(String()) = %v, %v; want %v", again, err, p)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	p, err := Parse("")
	if err != nil || p != Default() || p.String() != DefaultBind {
		t.Fatalf("Parse(\"\") = %v, %v; want Default() = %v", p, err, Default())
	}
}

func TestZeroPolicyAdmitsNobody(t *testing.T) {
	var p Policy
	for _, a := range []string{"127.0.0.1", "0.0.0.0", "10.0.0.1", "255.255.255.255"} {
		if p.Allows(netip.MustParseAddr(a)) {
			t.Errorf("zero Policy allows %s", a)
		}
	}
	if p.BindAddr().IsValid() || p.Peers().IsValid() || p.String() != "<none>" {
		t.Errorf("zero Policy: bind %v peers %v string %q", p.BindAddr(), p.Peers(), p.String())
	}
	if _, err := Parse(p.String()); err == nil {
		t.Errorf("Parse(%q) accepted the zero Policy's text", p.String())
	}
}
