// Package lua runs game modules written in Lua inside the DedicatedServer:
// one gopher-lua state per module, owned by the game thread, behind the
// module.Module contract (and module.StateCarrier for hot reload).
//
// It owns the sandbox (which libraries a script sees), the budgets (one
// deadline per tick for all of a module's Lua work, a deadline per command,
// builtins bounded by their input, an estimate of the module's Lua heap), the
// `spark` bindings a script programs against, and the hand-over of state
// from one instance of a script to the next.
//
// It must never let a script hold the tick much past its budget, grow memory
// without bound, reach the file system, the process or the network, or take
// the server down. Whatever a script does wrong is a Fault reported through
// Host.Fault; the module keeps running and the manager decides when enough
// is enough.
//
// The guide for game programmers is docs/lua-modules.md.
package lua
