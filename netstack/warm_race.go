//go:build race

package netstack

// warm does nothing under the race detector: its loads are without the
// session's lock (warm.go).
func warm(*peer) {}
