// Package supervisor runs the server's module instances behind the module
// contract (package module), whatever runtime made them: it calls every
// module method under recover and treats a panic, an error or a blown
// budget as a counted fault, never a crash of the server.
//
// It owns, per instance: the bounded inbox the network side fills and the
// game thread drains (a full inbox drops and counts, never blocks); the
// quotas (messages per client, tick budget); the fault record, restarts
// with backoff and the failed state; reloads; the message types and
// console commands registered for the instance's module; the Host handle
// each module gets; and the room scopes (an instance per room, or one for
// many, with the routing of events and sends by room).
//
// It never imports a runtime (runtimes/lua, runtimes/pluginhost): those
// register with module.RegisterRuntime and are started by kind. It never
// runs game rules either: matches, lobbies and rooms as rules are the
// host's. Only the game thread calls it, except where a method says
// otherwise (the receive goroutine's inbox writes).
package supervisor
