package mmo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pinA = "ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

func TestAreasConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) (Config, error) {
		if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return LoadConfig(dir)
	}
	two := `
[world]
area = "west"
[[world.areas]]
name = "west"
bounds = [0, 0, 500, 1000]
address = "127.0.0.1:27015"
pin = "` + pinA + `"
[[world.areas]]
name = "east"
bounds = [500, 0, 1000, 1000]
address = "127.0.0.1:27016"
pin = "` + pinA + `"
`
	cfg, err := write(two)
	if err != nil {
		t.Fatal(err)
	}
	m, err := cfg.areas(dir)
	if err != nil || m.own.name != "west" || len(m.all) != 2 || m.lifetime != 30 || m.keyFile != filepath.Join(dir, "world.key") {
		t.Fatalf("areas %+v %v", m, err)
	}
	if a := m.areaAt(500.5, 10); a == nil || a.name != "east" {
		t.Fatalf("areaAt(500.5) = %v", a)
	}
	if !m.own.contains(500, 10) || m.areaAt(250, 10) != nil {
		t.Fatal("the shared edge belongs to the own area; the own area is not a neighbour")
	}
	if x, y := m.own.clamp(530, -1); x != 500 || y != 0 {
		t.Fatalf("clamp = %v,%v", x, y)
	}
	for _, c := range []struct{ body, want string }{
		{strings.Replace(two, `area = "west"`, `area = "north"`, 1), "not one of"},
		{strings.Replace(two, "[500, 0, 1000, 1000]", "[400, 0, 1000, 1000]", 1), "overlap"},
		{strings.Replace(two, "[500, 0, 1000, 1000]", "[500, 0, 1001, 1000]", 1), "bounds"},
		{strings.Replace(two, `"127.0.0.1:27016"`, `"east.example:27016"`, 1), "IP:PORT"},
		{strings.Replace(two, `name = "east"`, `name = "West"`, 1), "name"},
		{strings.Replace(two, `name = "east"`, `name = "west"`, 1), "twice"},
		{strings.Replace(two, `area = "west"`, "area = \"west\"\nticket_lifetime = 1", 1), "ticket_lifetime"},
		{strings.Replace(two, pinA+`"`+"\n[[world.areas]]", `ed25519:nope"`+"\n[[world.areas]]", 1), "pin"},
		{"[world]\nkey_file = \"k\"\n", "no area"},
	} {
		if _, err := write(c.body); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error with %q, got %v", c.want, err)
		}
	}
}
