// Package hosttest runs a real host.Server for the length of a test: the
// tests of the host, the modules, the clients and the command line share
// it.
package hosttest

import (
	"context"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
)

// Run runs srv until the test ends; then it stops the server and reports
// an error from Run, or a server that does not stop within 10 s.
func Run(t testing.TB, srv *host.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("server did not stop within 10 s")
		}
	})
}
