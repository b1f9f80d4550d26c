package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
)

// Runtime kinds the host resolves module arguments to; the runtimes
// themselves are registered by the program (module.RegisterRuntime).
const (
	KindLua    = "lua"
	KindPlugin = "plugin"
)

// resolveModule turns a --module / `module load` argument into a Spec:
//   - NAME: a module built into this program (a Go plugin served by the
//     sparkhost binary itself), else SCRIPTS_DIR/NAME.lua;
//   - a path ending in .lua: a Lua script;
//   - any other path: a Go plugin executable.
func (s *Server) resolveModule(arg string) (supervisor.Spec, error) {
	if !strings.ContainsAny(arg, `/\`) && !strings.HasSuffix(arg, ".lua") {
		if s.opts.Builtin != nil {
			if path, args, ok := s.opts.Builtin(arg); ok {
				return s.spec(KindPlugin, module.Source{Name: arg, Path: path, Args: args})
			}
		}
		dir := s.opts.ScriptsDir
		if dir == "" {
			dir = "scripts"
		}
		path := filepath.Join(dir, arg+".lua")
		if _, err := os.Stat(path); err != nil {
			return supervisor.Spec{}, fmt.Errorf("unknown module %q: not built in, and no %s", arg, path)
		}
		return s.spec(KindLua, module.Source{Name: path, Path: path})
	}
	fi, err := os.Stat(arg)
	if err != nil {
		return supervisor.Spec{}, fmt.Errorf("module %s: %w", arg, err)
	}
	switch {
	case strings.HasSuffix(arg, ".lua"):
		return s.spec(KindLua, module.Source{Name: arg, Path: arg})
	case fi.IsDir():
		return supervisor.Spec{}, fmt.Errorf("module %s is a directory: give a .lua script or a Go plugin executable (go build -o BIN ./DIR builds one; see docs/go-plugins.md)", arg)
	case fi.Mode()&0o111 == 0:
		return supervisor.Spec{}, fmt.Errorf("module %s: not a .lua script nor an executable Go plugin (build one with go build; see docs/go-plugins.md)", arg)
	}
	return s.spec(KindPlugin, module.Source{Name: arg, Path: arg})
}

// spec builds the Spec of a module of a registered runtime kind.
func (s *Server) spec(kind string, src module.Source) (supervisor.Spec, error) {
	factory, ok := module.Runtime(kind)
	if !ok {
		return supervisor.Spec{}, fmt.Errorf("module %s needs the %s runtime, which this program does not include", src.Name, kind)
	}
	env := module.Env{
		Log: s.log, TickPeriod: s.cfg.TickPeriod(),
		SHA256: s.cfg.Modules.SHA256[src.Name],
		Plugin: module.PluginLimits{
			HangTimeout: s.cfg.PluginHangTimeout(), MemoryLimit: s.cfg.PluginMemoryLimit(),
			LogLinesPerSecond: s.cfg.Modules.PluginLogLinesPerSecond, LogBurst: s.cfg.Modules.PluginLogBurst,
			AnswerNextTick: s.cfg.Modules.PluginAnswers == "next_tick",
			Nice:           s.cfg.Modules.PluginNice,
		},
	}
	return supervisor.Spec{
		Source: src.Name, Kind: kind,
		New: func() (module.Module, error) { return factory(src, env) },
	}, nil
}
