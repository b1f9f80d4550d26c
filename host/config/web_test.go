package config

import (
	"strings"
	"testing"
)

// TestWebKeys: [web] is off by default, and its rules refuse a port shared
// with the game's UDP port, a certificate without its key, an origin that
// is not one, and both transports off.
func TestWebKeys(t *testing.T) {
	d := Default()
	if d.Web.Enabled || !d.Web.WebTransport || !d.Web.WebSocket {
		t.Fatalf("default [web]: %+v", d.Web)
	}
	for _, tc := range []struct{ name, toml, want string }{
		{"game port", "[server]\nport = 27015\n[web]\nenabled = true\nport = 27015\n", "web.port = 27015"},
		{"cert without key", "[web]\ncert_file = \"c.pem\"\n", "web.key_file go together"},
		{"bad origin", "[web]\nallowed_origins = [\"game.example\"]\n", `web.allowed_origins = "game.example"`},
		{"origin with a path", "[web]\nallowed_origins = [\"https://game.example/play\"]\n", "must be an origin"},
		{"nothing served", "[web]\nenabled = true\nwebtransport = false\nwebsocket = false\n", "both off"},
		{"idle timeout", "[web]\nidle_timeout = 0.5\n", "web.idle_timeout = 0.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.toml), "config.toml")
			if err == nil {
				err = c.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	c, err := Parse([]byte("[web]\nenabled = true\nallowed_origins = [\"https://game.example\", \"http://127.0.0.1:8080\", \"*\"]\n"), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
