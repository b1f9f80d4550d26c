package tomlkeys

import (
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestLocateKeys(t *testing.T) {
	cases := []struct {
		name string
		text string
		want Lines
	}{
		{"headers and keys", "# c = 1\n[server]\nport = 1 # x = 2\n\n[ match ]\n  game_mode=\"a = b\"\n",
			Lines{"server": 2, "server.port": 3, "match": 5, "match.game_mode": 6}},
		{"dotted and quoted keys", "[server]\n\"port\" = 1\nextra . 'a b' = 2\n[\"net\".inner]\n",
			Lines{"server": 1, "server.port": 2, "server.extra": 3, `server.extra."a b"`: 3, "net": 4, "net.inner": 4}},
		{"multi-line basic string hides keys", "[server]\nmotd = \"\"\"\nport = 5\n\\\"\"\" still inside\n\"\"\"\nport = 6\n",
			Lines{"server": 1, "server.motd": 2, "server.port": 6}},
		{"multi-line literal string hides keys", "[server]\nmotd = '''\nport = 5'''\nport = 6\n",
			Lines{"server": 1, "server.motd": 2, "server.port": 4}},
		{"closed on its own line", "[a]\nx = \"\"\"one line\"\"\" # y = 1\nz = 1\n",
			Lines{"a": 1, "a.x": 2, "a.z": 3}},
		{"multi-line array", "[match]\nmap_rotation = [\n  \"arena\", # k = 1\n  \"x = y\",\n]\nround_count = 2\n",
			Lines{"match": 1, "match.map_rotation": 2, "match.round_count": 6}},
		{"crlf and byte order mark", "\xef\xbb\xbf[server]\r\nport = 1\r\n",
			Lines{"server": 1, "server.port": 2}},
		{"first occurrence wins", "[server]\nport = 1\n[server]\nport = 2\n",
			Lines{"server": 1, "server.port": 2}},
		{"array of tables", "[[lan]]\nport = 1\n",
			Lines{"lan": 1, "lan.port": 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Locate([]byte(tc.text)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Locate =\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

func TestLineOfFallsBackToParent(t *testing.T) {
	kl := Locate([]byte("\nserver = { port = 1 }\n"))
	if got := kl.LineOf(toml.Key{"server", "port"}); got != 2 {
		t.Errorf("LineOf(server.port) in an inline table = %d, want 2 (the table's line)", got)
	}
	if got := kl.LineOf(toml.Key{"lan", "port"}); got != 0 {
		t.Errorf("LineOf(absent) = %d, want 0", got)
	}
}
