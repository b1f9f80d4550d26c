package maps

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

// shipped holds the map files shipped with sparkhost (data/NAME.toml),
// embedded so that a server finds them from any working directory.
//
//go:embed data/*.toml
var shipped embed.FS

// Catalog is a set of maps by name, loaded from one directory.
type Catalog struct {
	origin string
	byName map[string]*Map
	names  []string // sorted
}

// LoadDir loads every NAME.toml of dir (not its subdirectories). The first
// invalid file fails the whole load, with its error; so does a directory
// with no map.
func LoadDir(dir string) (*Catalog, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("maps directory: %w", err)
	}
	return LoadFS(os.DirFS(dir), dir)
}

// LoadFS is LoadDir over the root of fsys; origin names it in messages (a
// file is reported as origin/NAME.toml).
func LoadFS(fsys fs.FS, origin string) (*Catalog, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("maps directory %s: %w", origin, err)
	}
	c := &Catalog{origin: origin, byName: make(map[string]*Map)}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".toml") {
			continue
		}
		file := path.Join(origin, e.Name())
		if info, err := e.Info(); err == nil && info.Size() > MaxFileSize {
			return nil, &Error{File: file, Reason: fmt.Sprintf("%d bytes, above the %d-byte limit of a map file", info.Size(), MaxFileSize)}
		}
		data, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		m, err := Parse(data, file)
		if err != nil {
			return nil, err
		}
		c.byName[m.Name] = m
		c.names = append(c.names, m.Name)
	}
	if len(c.names) == 0 {
		return nil, fmt.Errorf("maps directory %s holds no NAME.toml map file", origin)
	}
	slices.Sort(c.names)
	return c, nil
}

// builtin is parsed once: the embedded files never change.
var builtin = sync.OnceValues(func() (*Catalog, error) {
	data, err := fs.Sub(shipped, "data")
	if err != nil {
		return nil, err
	}
	return LoadFS(data, "maps (built in)")
})

// Builtin returns the maps shipped in the repository's maps/ directory,
// embedded in the binary. The Catalog is shared: treat it as read-only.
func Builtin() (*Catalog, error) { return builtin() }

// Origin is the directory the maps were loaded from.
func (c *Catalog) Origin() string { return c.origin }

// Get returns the map called name.
func (c *Catalog) Get(name string) (*Map, bool) {
	m, ok := c.byName[name]
	return m, ok
}

// Names returns the map names in order.
func (c *Catalog) Names() []string { return slices.Clone(c.names) }

// Require checks that every name is a map of the catalog (a rotation); the
// error names the first missing one and lists what there is.
func (c *Catalog) Require(names ...string) error {
	for _, n := range names {
		if _, ok := c.byName[n]; !ok {
			return fmt.Errorf("map %q is not in %s (it has %s): add %s.toml there or take it out of the rotation",
				n, c.origin, strings.Join(c.names, ", "), n)
		}
	}
	return nil
}
