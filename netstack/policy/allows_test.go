package policy

import (
	"errors"
	"net/netip"
	"testing"
)

func TestAllows(t *testing.T) {
	cases := []struct {
		policy string
		peer   string
		want   bool
	}{
		// Loopback: all of 127.0.0.0/8 but its network and broadcast address.
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.1", "127.3.4.5", true},
		{"127.0.0.1", "127.0.0.2", true},
		{"127.0.0.1", "127.255.255.254", true},
		{"127.0.0.1", "127.0.0.0", false},
		{"127.0.0.1", "127.255.255.255", false},
		{"127.0.0.1", "10.0.0.1", false},
		{"127.0.0.1", "128.0.0.1", false},
		{"127.0.0.1", "126.255.255.255", false},
		{"127.0.0.1", "0.0.0.0", false},
		{"127.0.0.1", "::1", false},
		{"127.0.0.1", "::ffff:127.0.0.1", false},
		{"127.9.9.9", "127.0.0.1", true},
		// LAN /24: concrete hosts of the subnet only.
		{"192.168.1.20/24", "192.168.1.20", true},
		{"192.168.1.20/24", "192.168.1.1", true},
		{"192.168.1.20/24", "192.168.1.254", true},
		{"192.168.1.20/24", "192.168.1.0", false},
		{"192.168.1.20/24", "192.168.1.255", false},
		{"192.168.1.20/24", "192.168.2.1", false},
		{"192.168.1.20/24", "192.168.0.255", false},
		{"192.168.1.20/24", "127.0.0.1", false},
		{"192.168.1.20/24", "10.0.0.1", false},
		{"192.168.1.20/24", "::ffff:192.168.1.1", false},
		{"192.168.1.20/24", "255.255.255.255", false},
		// LAN /8 and /30.
		{"10.1.2.3/8", "10.200.100.50", true},
		{"10.1.2.3/8", "10.0.0.0", false},
		{"10.1.2.3/8", "10.255.255.255", false},
		{"10.1.2.3/8", "11.0.0.1", false},
		{"192.168.1.1/30", "192.168.1.2", true},
		{"192.168.1.1/30", "192.168.1.0", false},
		{"192.168.1.1/30", "192.168.1.3", false},
		{"192.168.1.1/30", "192.168.1.4", false},
		// A /23 whose bind host ends in .0 or .255 is still a concrete host.
		{"192.168.1.0/23", "192.168.0.255", true},
		{"192.168.1.0/23", "192.168.0.0", false},
		{"192.168.1.0/23", "192.168.1.255", false},
	}
	for _, tc := range cases {
		t.Run(tc.policy+"~"+tc.peer, func(t *testing.T) {
			p, err := Parse(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Allows(netip.MustParseAddr(tc.peer)); got != tc.want {
				t.Errorf("Parse(%q).Allows(%s) = %v, want %v", tc.policy, tc.peer, got, tc.want)
			}
		})
	}
	if Default().Allows(netip.Addr{}) {
		t.Error("Allows(invalid Addr) = true")
	}
}

func TestAllowsDoesNotAllocate(t *testing.T) {
	p, _ := Parse("192.168.1.20/24")
	peers := []netip.Addr{netip.MustParseAddr("192.168.1.7"), netip.MustParseAddr("::1"), netip.MustParseAddr("8.8.8.8")}
	allocs := testing.AllocsPerRun(1000, func() {
		for _, a := range peers {
			p.Allows(a)
		}
	})
	if allocs != 0 {
		t.Fatalf("Allows allocates %v times per run", allocs)
	}
}

func BenchmarkAllows(b *testing.B) {
	p := Default()
	peer := netip.MustParseAddr("127.0.0.1")
	b.ReportAllocs()
	for b.Loop() {
		if !p.Allows(peer) {
			b.Fatal("refused")
		}
	}
}

func TestResolvePrecedence(t *testing.T) {
	cases := []struct {
		flag, env, file string
		want            string
	}{
		{"", "", "", "127.0.0.1"},
		{"", "", "10.0.0.5/8", "10.0.0.5/8"},
		{"", "192.168.1.20/24", "10.0.0.5/8", "192.168.1.20/24"},
		{"127.0.0.2", "192.168.1.20/24", "10.0.0.5/8", "127.0.0.2"},
		{"127.0.0.2", "", "", "127.0.0.2"},
	}
	for _, tc := range cases {
		p, err := Resolve(tc.flag, tc.env, tc.file)
		if err != nil || p.String() != tc.want {
			t.Errorf("Resolve(%q, %q, %q) = %v, %v; want %s", tc.flag, tc.env, tc.file, p, err, tc.want)
		}
	}
	// A bad higher-precedence value is an error, never a silent fallback.
	_, err := Resolve("", "0.0.0.0", "192.168.1.20/24")
	const want = `bind address from SPARK_NETWORK_BIND_ADDRESS: policy: "0.0.0.0": wildcard address not allowed` + hintGen
	if !errors.Is(err, ErrWildcard) || err.Error() != want {
		t.Errorf("Resolve with bad env: %v; want %s", err, want)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvVar, "192.168.1.20/24")
	if p, err := FromEnv(""); err != nil || p.String() != "192.168.1.20/24" {
		t.Errorf("FromEnv(\"\") with env set = %v, %v", p, err)
	}
	if p, err := FromEnv("127.0.0.5"); err != nil || p.String() != "127.0.0.5" {
		t.Errorf("FromEnv(flag) = %v, %v; the flag must win", p, err)
	}
	t.Setenv(EnvVar, "")
	if p, err := FromEnv(""); err != nil || p != Default() {
		t.Errorf("FromEnv with empty env = %v, %v; want default", p, err)
	}
	t.Setenv(EnvVar, "localhost")
	if _, err := FromEnv(""); !errors.Is(err, ErrHostname) {
		t.Errorf("FromEnv with env localhost: %v; want ErrHostname", err)
	}
}

func TestParseInternet(t *testing.T) {
	ok := []struct {
		in, network string
		peers       map[string]bool
	}{
		{"::", "udp", map[string]bool{"127.0.0.1": true, "::1": true, "8.8.8.8": true, "2001:db8::1": true,
			"0.0.0.0": false, "::": false, "224.0.0.1": false, "ff02::1": false, "255.255.255.255": false, "0.1.2.3": false}},
		{"0.0.0.0", "udp4", map[string]bool{"127.0.0.1": true, "10.1.2.3": true, "::1": false, "2001:db8::1": false}},
		{"127.0.0.1", "udp4", map[string]bool{"127.0.0.5": true, "8.8.8.8": true}},
		{"2001:db8::7", "udp6", map[string]bool{"2001:db8::1": true, "127.0.0.1": false}},
		{"", "udp4", map[string]bool{"127.0.0.1": true}},
	}
	for _, tc := range ok {
		p, err := ParseInternet(tc.in)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if !p.Internet() || p.Network() != tc.network {
			t.Errorf("%q: internet %v network %q, want %q", tc.in, p.Internet(), p.Network(), tc.network)
		}
		for peer, want := range tc.peers {
			if got := p.Allows(netip.MustParseAddr(peer)); got != want {
				t.Errorf("%q admits %s = %v, want %v", tc.in, peer, got, want)
			}
		}
		if p.Exposure() == "" {
			t.Errorf("%q: no exposure text", tc.in)
		}
	}
	bad := []struct {
		in   string
		want error
	}{
		{"0::0", ErrNotCanonical}, {"[::]", ErrNotCanonical}, {" ::", ErrNotCanonical}, {"localhost", ErrNotCanonical},
		{"10.0.0.1/8", ErrInternetPrefix}, {"::/0", ErrInternetPrefix},
		{"fe80::1%eth0", ErrLinkLocal}, {"fe80::1", ErrLinkLocal}, {"169.254.1.1", ErrLinkLocal},
		{"::ffff:1.2.3.4", ErrIPv6}, {"224.0.0.1", ErrMulticast}, {"ff02::1", ErrMulticast},
		{"255.255.255.255", ErrLimitedBroadcast}, {"0.1.2.3", ErrReserved}, {"127.000.0.1", ErrNotCanonical},
	}
	for _, tc := range bad {
		if _, err := ParseInternet(tc.in); !errors.Is(err, tc.want) {
			t.Errorf("ParseInternet(%q) = %v, want %v", tc.in, err, tc.want)
		}
	}
	// The private policies are unchanged: Parse still refuses what internet
	// mode allows.
	for _, in := range []string{"::", "0.0.0.0", "8.8.8.8"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted an internet-only bind", in)
		}
	}
	if Default().Internet() || Default().Network() != "udp4" {
		t.Error("the default policy is not private IPv4")
	}
}
