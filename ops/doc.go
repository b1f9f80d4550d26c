// Package ops owns the operator's surfaces that are not the console: the
// Prometheus metrics, the /healthz and /readyz probes, and the live status
// page, all served by one HTTP listener (Server), and the per-second history
// the page plots.
//
// It reads what the DedicatedServer publishes (a Source: snapshots built by
// the game thread, atomics the network goroutines update) and the tick
// durations the game thread hands to a TickRecorder (atomics and a
// lock-free histogram). It never writes game state, never takes a lock the
// game thread waits for, and never calls into the game thread: a scrape or
// a page view costs the game nothing.
package ops
