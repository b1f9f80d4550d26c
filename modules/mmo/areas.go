package mmo

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"path/filepath"

	"github.com/sparkhost/sparkhost/netstack/trust"
)

// WorldConfig is the [world] table: a world split into areas, each
// simulated by one server (docs/mmo.md §13, docs/scaling.md). Every server
// of the world has the same [[world.areas]] list and names its own in
// area. Empty (the default), the server simulates the whole world alone.
type WorldConfig struct {
	// Area names this server's area, one of Areas.
	Area string `toml:"area"`
	// KeyFile is the world key (the Ed25519 key that signs gateway tickets,
	// shared by every area server of the world); a relative path is in the
	// module's data directory. Default "world.key"; created at first start
	// when missing (then copy it to the other area servers, mode 0600).
	KeyFile string `toml:"key_file"`
	// TicketLifetime in seconds: how long a gateway ticket and the claim in
	// transit last (2..300; default 30).
	TicketLifetime float64 `toml:"ticket_lifetime"`
	// Areas is every area of the world.
	Areas []AreaConfig `toml:"areas"`
}

// AreaConfig is one [[world.areas]] entry.
type AreaConfig struct {
	// Name: 1..32 of a-z 0-9 _ -.
	Name string `toml:"name"`
	// Bounds is [x0, y0, x1, y1]: the area is x0 ≤ x ≤ x1, y0 ≤ y ≤ y1,
	// inside the world's width × height; areas may share edges, not more.
	Bounds []float64 `toml:"bounds"`
	// Address is HOST:PORT, where clients reach the area's server (an IP
	// address: the client dials it as given).
	Address string `toml:"address"`
	// Pin is the area server's identity ("ed25519:…", `sparkhost run`
	// prints it): clients pin it, and tickets for the area are bound to it.
	Pin string `toml:"pin"`
}

// area is a validated AreaConfig.
type area struct {
	name           string
	x0, y0, x1, y1 float64
	addr, pin      string
	key            [32]byte // the pin's identity key
}

func (a *area) contains(x, y float64) bool {
	return x >= a.x0 && x <= a.x1 && y >= a.y0 && y <= a.y1
}

// clamp returns the point of the area nearest (x, y).
func (a *area) clamp(x, y float64) (float64, float64) {
	return min(max(x, a.x0), a.x1), min(max(y, a.y0), a.y1)
}

// areaMap is the world's areas and this server's own.
type areaMap struct {
	own      *area
	all      []area
	keyFile  string
	lifetime float64 // seconds
}

// areaAt returns the area other than own that contains (x, y), or nil.
func (m *areaMap) areaAt(x, y float64) *area {
	for i := range m.all {
		if a := &m.all[i]; a != m.own && a.contains(x, y) {
			return a
		}
	}
	return nil
}

// Ticket lifetime bounds, in seconds.
const (
	defaultTicketLifetime = 30
	maxTicketLifetime     = 300
)

// areas validates the [world] table against the world's size: nil when the
// server has no area.
func (c Config) areas(dataDir string) (*areaMap, error) {
	w := c.World
	if w.Area == "" {
		if len(w.Areas) > 0 || w.KeyFile != "" || w.TicketLifetime != 0 {
			return nil, errors.New("[world] has areas or keys but no area: name this server's area in [world] area")
		}
		return nil, nil
	}
	m := &areaMap{lifetime: w.TicketLifetime, keyFile: w.KeyFile}
	if m.lifetime == 0 {
		m.lifetime = defaultTicketLifetime
	}
	if math.IsNaN(m.lifetime) || m.lifetime < 2 || m.lifetime > maxTicketLifetime {
		return nil, fmt.Errorf("[world] ticket_lifetime = %v: must be 2..%d seconds", w.TicketLifetime, maxTicketLifetime)
	}
	if m.keyFile == "" {
		m.keyFile = "world.key"
	}
	if !filepath.IsAbs(m.keyFile) {
		m.keyFile = filepath.Join(dataDir, m.keyFile)
	}
	seen := map[string]bool{}
	for _, ac := range w.Areas {
		a, err := ac.validate(c.Width, c.Height)
		if err != nil {
			return nil, err
		}
		if seen[a.name] {
			return nil, fmt.Errorf("[[world.areas]] %q appears twice", a.name)
		}
		seen[a.name] = true
		for _, b := range m.all {
			if a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 {
				return nil, fmt.Errorf("[[world.areas]] %q and %q overlap (areas may share edges only)", b.name, a.name)
			}
		}
		m.all = append(m.all, a)
	}
	for i := range m.all {
		if m.all[i].name == w.Area {
			m.own = &m.all[i]
		}
	}
	if m.own == nil {
		return nil, fmt.Errorf("[world] area = %q is not one of [[world.areas]]", w.Area)
	}
	return m, nil
}

func (ac AreaConfig) validate(width, height float64) (area, error) {
	a := area{name: ac.Name, addr: ac.Address, pin: ac.Pin}
	if !validAreaName(ac.Name) {
		return a, fmt.Errorf("[[world.areas]] name %q: 1..32 of a-z 0-9 _ -", ac.Name)
	}
	if len(ac.Bounds) != 4 {
		return a, fmt.Errorf("[[world.areas]] %q: bounds must be [x0, y0, x1, y1]", ac.Name)
	}
	a.x0, a.y0, a.x1, a.y1 = ac.Bounds[0], ac.Bounds[1], ac.Bounds[2], ac.Bounds[3]
	if !(a.x0 >= 0 && a.y0 >= 0 && a.x0 < a.x1 && a.y0 < a.y1 && a.x1 <= width && a.y1 <= height) {
		return a, fmt.Errorf("[[world.areas]] %q: bounds %v must satisfy 0 ≤ x0 < x1 ≤ width (%v), 0 ≤ y0 < y1 ≤ height (%v)", ac.Name, ac.Bounds, width, height)
	}
	ap, err := netip.ParseAddrPort(ac.Address)
	if err != nil || ap.Port() == 0 || len(ac.Address) > 64 {
		return a, fmt.Errorf("[[world.areas]] %q: address %q must be IP:PORT (e.g. 10.0.0.5:27015)", ac.Name, ac.Address)
	}
	key, err := trust.ParsePin(ac.Pin)
	if err != nil {
		return a, fmt.Errorf("[[world.areas]] %q: pin: %v", ac.Name, err)
	}
	a.key = key
	return a, nil
}

func validAreaName(s string) bool {
	if len(s) < 1 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
