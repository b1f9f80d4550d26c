package pluginhost

import "github.com/sparkhost/sparkhost/module"

// Kind is the runtime kind of Go plugin modules (module.RegisterRuntime).
const Kind = "plugin"

var _ module.Factory = NewRuntime

// NewRuntime is the module.Factory of Go plugins: src.Path (with src.Args)
// is the executable, src.Name how the operator named it.
func NewRuntime(src module.Source, env module.Env) (module.Module, error) {
	return New(Config{
		Path: src.Path, Args: src.Args, Source: src.Name, Log: env.Log,
		SHA256: env.SHA256, HangTimeout: env.Plugin.HangTimeout, MemoryLimit: env.Plugin.MemoryLimit,
		LogLinesPerSecond: env.Plugin.LogLinesPerSecond, LogBurst: env.Plugin.LogBurst,
		AnswerNextTick: env.Plugin.AnswerNextTick, Nice: env.Plugin.Nice,
	})
}
