package lua

import "github.com/sparkhost/sparkhost/module"

// Kind is the runtime kind of Lua modules (module.RegisterRuntime).
const Kind = "lua"

var _ module.Factory = NewRuntime

// NewRuntime is the module.Factory of Lua modules: src.Path is the script.
func NewRuntime(src module.Source, _ module.Env) (module.Module, error) {
	return New(src.Path, Config{})
}
