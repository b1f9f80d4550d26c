package config

import (
	"strings"
	"testing"
)

func TestRoomsValidation(t *testing.T) {
	cases := []struct {
		name, file string
		o          Overrides
		want       string // "" = valid
	}{
		{name: "default: one match", want: ""},
		{name: "lobby with modes", file: "[rooms]\nenabled = true\nmodes = [\"deathmatch\", \"tag\"]\n"},
		{name: "--rooms --mode", o: Overrides{Rooms: true, Modes: []string{"tag"}}},
		{name: "lobby without modes", file: "[rooms]\nenabled = true\n", want: "config.toml:2: rooms.modes = [] (default): must name at least one module when rooms.enabled is true"},
		{name: "--rooms without a mode", o: Overrides{Rooms: true}, want: "rooms.modes = [] (default): must name at least one module"},
		{name: "duplicate mode", file: "[rooms]\nmodes = [\"tag\", \"tag\"]\n", want: "rooms.modes[1] = \"tag\": duplicate of rooms.modes[0]"},
		{name: "control character", file: "[rooms]\nmodes = [\"t\\u0001g\"]\n", want: "must be a name"},
		{name: "default over max capacity", file: "[rooms]\ndefault_capacity = 9\nmax_capacity = 8\n", want: "rooms.default_capacity = 9: must be 1..rooms.max_capacity (8)"},
		{name: "capacity over the protocol's", file: "[rooms]\nmax_capacity = 2000\n", want: "rooms.max_capacity = 2000: must be 1..1024 players"},
		{name: "pause policy", file: "[rooms]\npause = \"anyone\"\n", want: `rooms.pause = "anyone": must be "members" or "owner"`},
		{name: "password settings", file: "[rooms]\npassword_free_failures = 3\npassword_backoff_seconds = 0.5\npassword_backoff_max_seconds = 60\npassword_kick_after = 20\n"},
		{name: "no free password", file: "[rooms]\npassword_free_failures = 0\n", want: "rooms.password_free_failures = 0: must be 1..1000 passwords"},
		{name: "password back-off max under the first", file: "[rooms]\npassword_backoff_seconds = 5\npassword_backoff_max_seconds = 2\n",
			want: "rooms.password_backoff_max_seconds = 2: must be at least rooms.password_backoff_seconds (5)"},
		{name: "password kick never", file: "[rooms]\npassword_kick_after = 0\n", want: "rooms.password_kick_after = 0: must be 1..1000 passwords"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.file), "config.toml") // Parse validates too
			if err == nil {
				c.Apply(tc.o, nil)
				err = c.Validate()
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}
