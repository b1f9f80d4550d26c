package policy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that every refusal is a *ParseError
// naming the input, and that an accepted text is canonical: it is exactly what
// String prints, and it means what the standard library thinks it means.
func FuzzParse(f *testing.F) {
	for _, tc := range rejectCases {
		f.Add(tc.in)
	}
	for _, tc := range acceptCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Parse(in)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Input != in || errors.Unwrap(err) == nil {
				t.Fatalf("Parse(%q): error %v is not a *ParseError wrapping a sentinel", in, err)
			}
			return
		}
		s := p.String()
		if in != "" && s != in {
			t.Fatalf("Parse(%q) accepted non-canonical text; String() = %q", in, s)
		}
		again, err := Parse(s)
		if err != nil || again != p {
			t.Fatalf("Parse(%q) = %v, %v; want %v", s, again, err, p)
		}
		bind := p.BindAddr()
		if !bind.Is4() || !p.Allows(bind) || !p.Peers().Contains(bind) {
			t.Fatalf("Parse(%q): bind %v peers %v inconsistent", in, bind, p.Peers())
		}
		if in != "" {
			host, _, _ := strings.Cut(in, "/")
			if std, err := netip.ParseAddr(host); err != nil || std != bind {
				t.Fatalf("Parse(%q) bind %v, netip says %v, %v", in, bind, std, err)
			}
		}
		if p.Allows(p.Peers().Addr()) {
			t.Fatalf("Parse(%q) admits the network address %v", in, p.Peers().Addr())
		}
	})
}

// FuzzParseInternet: never panics; an accepted bind is canonical (String
// maps back to the same Policy) and admits no unspecified or multicast peer.
func FuzzParseInternet(f *testing.F) {
	for _, s := range []string{"::", "0.0.0.0", "127.0.0.1", "2001:db8::1", "8.8.8.8", "::ffff:1.2.3.4", "fe80::1%eth0", "10.0.0.1/8", " ::", "0::0", "[::]", "ff02::1", "255.255.255.255", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseInternet(s)
		if err != nil {
			if !errors.As(err, new(*ParseError)) {
				t.Fatalf("%q: error %v is not a *ParseError", s, err)
			}
			return
		}
		again, err := ParseInternet(p.String())
		if err != nil || again != p {
			t.Fatalf("%q: String %q does not map back (%v)", s, p.String(), err)
		}
		for _, peer := range []netip.Addr{netip.IPv4Unspecified(), netip.IPv6Unspecified(), netip.MustParseAddr("224.0.0.1"), netip.MustParseAddr("ff02::1")} {
			if p.Allows(peer) {
				t.Fatalf("%q admits %v", s, peer)
			}
		}
	})
}
