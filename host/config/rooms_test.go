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
