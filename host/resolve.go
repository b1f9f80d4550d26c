package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sparkhost/sparkhost/host/lua"
	"github.com/sparkhost/sparkhost/host/module"
	"github.com/sparkhost/sparkhost/host/pluginhost"
)

// resolveModule turns a --module / `module load` argument into a Spec:
//   - NAME: a module built into this program (a Go plugin served by the
//     sparkhost binary itself), else SCRIPTS_DIR/NAME.lua;
//   - a path ending in .lua: a Lua script;
//   - any other path: a Go plugin executable.
func (s *Server) resolveModule(arg string) (module.Spec, error) {
	if !strings.ContainsAny(arg, `/\`) && !strings.HasSuffix(arg, ".lua") {
		if s.opts.Builtin != nil {
			if path, args, ok := s.opts.Builtin(arg); ok {
				return s.pluginSpec(arg, path, args), nil
			}
		}
		dir := s.opts.ScriptsDir
		if dir == "" {
			dir = "scripts"
		}
		path := filepath.Join(dir, arg+".lua")
		if _, err := os.Stat(path); err != nil {
			return module.Spec{}, fmt.Errorf("unknown module %q: not built in, and no %s", arg, path)
		}
		return luaSpec(path), nil
	}
	fi, err := os.Stat(arg)
	if err != nil {
		return module.Spec{}, fmt.Errorf("module %s: %w", arg, err)
	}
	if strings.HasSuffix(arg, ".lua") {
		return luaSpec(arg), nil
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return module.Spec{}, fmt.Errorf("module %s: not a .lua script nor an executable Go plugin (build one with go build; see docs/go-plugins.md)", arg)
	}
	return s.pluginSpec(arg, arg, nil), nil
}

func luaSpec(path string) module.Spec {
	cfg := lua.Config{}
	return module.Spec{
		Source: path, Kind: "lua",
		New:  func() (module.Module, error) { return lua.New(path, cfg) },
		Hash: func(m module.Module) string { return m.(*lua.Module).CodeHash() },
	}
}

// pluginSpec runs path with args as a Go plugin; source is how the
// operator named it (the key of its [modules.sha256] entry).
func (s *Server) pluginSpec(source, path string, args []string) module.Spec {
	cfg := pluginhost.Config{
		Path: path, Args: args, Source: source, Log: s.log,
		SHA256:       s.cfg.Modules.SHA256[source],
		TickDeadline: s.cfg.TickDeadline(),
	}
	return module.Spec{
		Source: source, Kind: "plugin",
		New:  func() (module.Module, error) { return pluginhost.New(cfg) },
		Hash: func(m module.Module) string { return m.(*pluginhost.Module).CodeHash() },
	}
}
