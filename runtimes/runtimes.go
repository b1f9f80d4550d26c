// Package runtimes registers the module runtimes this project ships (Lua,
// Go plugins) with package module, once. The program (cmd/sparkhost) calls
// Register at start; tests that run a real server with modules call it too.
// The host never imports the runtimes (ARCHITECTURE.md): it finds them by
// kind.
package runtimes

import (
	"sync"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/runtimes/lua"
	"github.com/sparkhost/sparkhost/runtimes/pluginhost"
)

var once sync.Once

// Register registers the Lua and Go plugin runtimes (idempotent).
func Register() {
	once.Do(func() {
		module.RegisterRuntime(lua.Kind, lua.NewRuntime)
		module.RegisterRuntime(pluginhost.Kind, pluginhost.NewRuntime)
	})
}
