package config

import (
	"strings"
	"testing"
)

// Internet mode is an explicit opt-in: it widens the bind, and refuses what
// would undo its guarantees.
func TestInternetMode(t *testing.T) {
	ok := []struct{ name, file string }{
		{"dual stack", "[network]\nexposure = \"internet\"\nbind_address = \"::\"\n"},
		{"IPv4 wildcard", "[network]\nexposure = \"internet\"\nbind_address = \"0.0.0.0\"\n"},
		{"public address", "[network]\nexposure = \"internet\"\nbind_address = \"8.8.8.8\"\n"},
		{"loopback", "[network]\nexposure = \"internet\"\n"},
		{"allow_v3 false", "[network]\nexposure = \"internet\"\nallow_v3 = false\n"},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.file), "config.toml")
			if err != nil {
				t.Fatal(err)
			}
			if !c.Internet() {
				t.Fatal("Internet() is false")
			}
		})
	}
	bad := []struct{ name, file, want string }{
		{"unknown exposure", "[network]\nexposure = \"public\"\n",
			`config.toml:2: network.exposure = "public": must be "private" or "internet"`},
		{"wildcard without the opt-in", "[network]\nbind_address = \"::\"\n",
			`to face the internet, set network.exposure = "internet"`},
		{"prefix in internet mode", "[network]\nexposure = \"internet\"\nbind_address = \"10.0.0.1/8\"\n",
			`internet-mode bind address takes no prefix`},
		{"v3 in internet mode", "[network]\nexposure = \"internet\"\nallow_v3 = true\n",
			`config.toml:3: network.allow_v3 = true: internet mode never accepts protocol v3`},
		{"no validation in internet mode", "[network]\nexposure = \"internet\"\naddress_validation = false\n",
			`config.toml:3: network.address_validation = false: internet mode always validates addresses`},
		{"LAN discovery in internet mode", "[network]\nexposure = \"internet\"\n[lan]\nenabled = true\n",
			`config.toml:4: lan.enabled = true: LAN discovery is for private binds`},
		{"zero handshake budget", "[network]\nhandshakes_per_second = 0\n",
			`network.handshakes_per_second = 0: must be 1..1e+06 signatures per second`},
		{"half-open cap", "[network]\nhalf_open_per_prefix = 0\n", `network.half_open_per_prefix = 0: must be 1..65536 handshakes`},
		{"half-open timeout", "[network]\nhalf_open_timeout = 0.5\n", `network.half_open_timeout = 0.5: must be 1..60 seconds`},
		{"prefix refill", "[network]\nprefix_refill_per_second = 0\n", `network.prefix_refill_per_second = 0: must be 0.001..1e9`},
		{"refusal budget", "[network]\nunvalidated_refusals_per_second = 0\n",
			`network.unvalidated_refusals_per_second = 0: must be 1..1e+06 datagrams per second`},
		{"negative admission cap", "[network]\nadmitted_per_address = -1\n",
			`config.toml:2: network.admitted_per_address = -1: must be 0..4096 clients (0 = no cap)`},
		{"admission cap too large", "[network]\nadmitted_per_prefix = 5000\n",
			`config.toml:2: network.admitted_per_prefix = 5000: must be 0..4096 clients (0 = no cap)`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file), "config.toml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestInternetFlag(t *testing.T) {
	c := Default()
	c.Apply(Overrides{Internet: true, Bind: ptr("::")}, nil)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !c.Internet() || c.Network.BindAddress != "::" {
		t.Fatalf("exposure %q bind %q", c.Network.Exposure, c.Network.BindAddress)
	}
	// The default allow_v3 = true is not the operator's choice: no
	// refusal, and internet mode is v4 only.
	if c.Network.AllowV3 {
		t.Fatal("--internet left v3 on")
	}
	c.Apply(Overrides{Internet: true, Bind: ptr("::/0")}, nil)
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "(--bind)") {
		t.Fatalf("Validate = %v, want a refusal naming --bind", err)
	}
}

// TestInternetFlagOnTheBuiltInDefaults: `sparkhost run --internet` on the
// built-in defaults (DefaultTOML, which the repository's config.toml
// copies) serves v4 only; allow_v3 = true written by the operator is
// refused with the file, the line and the key.
func TestInternetFlagOnTheBuiltInDefaults(t *testing.T) {
	c := BuiltIn()
	c.Apply(Overrides{Internet: true, Bind: ptr("127.0.0.1")}, nil)
	if err := c.Validate(); err != nil {
		t.Fatalf("--internet on the defaults: %v", err)
	}
	if c.Network.AllowV3 {
		t.Error("--internet left allow_v3 on: internet mode is v4 only")
	}
	c, err := Parse([]byte("[network]\nallow_v3 = true\n"), "my.toml")
	if err != nil {
		t.Fatal(err)
	}
	c.Apply(Overrides{Internet: true}, nil)
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "my.toml:2: network.allow_v3 = true: internet mode never accepts protocol v3") {
		t.Fatalf("allow_v3 = true with --internet: %v", err)
	}
}
