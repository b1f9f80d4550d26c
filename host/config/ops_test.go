package config

import (
	"strings"
	"testing"
)

func TestOpsAndAgones(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string // want "" = valid
	}{
		{"off by default", "", ""},
		{"loopback", "[ops]\nlisten = \"127.0.0.1:9150\"\n", ""},
		{"localhost any port", "[ops]\nlisten = \"localhost:0\"\n", ""},
		{"ipv6 loopback", "[ops]\nlisten = \"[::1]:9150\"\n", ""},
		{"remote needs consent", "[ops]\nlisten = \"0.0.0.0:9150\"\n",
			`config.toml:2: ops.listen = "0.0.0.0:9150": is not a loopback address`},
		{"remote with consent", "[network]\nexposure = \"internet\"\nbind_address = \"0.0.0.0\"\nallow_v3 = false\n\n[ops]\nlisten = \"0.0.0.0:9150\"\n", ""},
		{"no port", "[ops]\nlisten = \"127.0.0.1\"\n", `ops.listen = "127.0.0.1": must be "host:port"`},
		{"host name", "[ops]\nlisten = \"example.org:9150\"\n", "the host must be an IP address"},
		{"stall", "[ops]\nstall_seconds = 0.0\n", "config.toml:2: ops.stall_seconds = 0: must be 0.1..600 seconds"},
		{"history", "[ops]\nhistory_seconds = 5\n", "ops.history_seconds = 5: must be 10..86400 seconds"},
		{"agones port", "[agones]\nsdk_port = 70000\n", "agones.sdk_port = 70000: must be 0..65535"},
		{"agones interval", "[agones]\nenabled = true\nhealth_seconds = 0.0\n", "agones.health_seconds = 0: must be 0.1..300 seconds"},
		{"unknown ops key", "[ops]\nport = 9150\n", `unknown key "ops.port" (known keys in [ops]: listen, stall_seconds, history_seconds)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file), "config.toml")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted; want %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error\n got: %v\nwant: …%s…", err, tc.want)
			}
		})
	}
}
