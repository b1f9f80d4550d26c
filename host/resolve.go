package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sparkhost/sparkhost/host/lua"
	"github.com/sparkhost/sparkhost/host/module"
)

// resolveModule turns a --module / `module load` argument into a Spec: a path
// to a .lua file, or a NAME found as SCRIPTS_DIR/NAME.lua.
func (s *Server) resolveModule(arg string) (module.Spec, error) {
	dir := s.opts.ScriptsDir
	if dir == "" {
		dir = "scripts"
	}
	path := arg
	if !strings.HasSuffix(arg, ".lua") {
		if strings.ContainsAny(arg, `/\`) {
			return module.Spec{}, fmt.Errorf("module %q: a path must name a .lua file", arg)
		}
		path = filepath.Join(dir, arg+".lua")
		if _, err := os.Stat(path); err != nil {
			return module.Spec{}, fmt.Errorf("unknown module %q: no %s", arg, path)
		}
	}
	if _, err := os.Stat(path); err != nil {
		return module.Spec{}, fmt.Errorf("module %s: %w", path, err)
	}
	cfg := lua.Config{}
	return module.Spec{
		Source: path, Kind: "lua",
		New:  func() (module.Module, error) { return lua.New(path, cfg) },
		Hash: func(m module.Module) string { return m.(*lua.Module).CodeHash() },
	}, nil
}
