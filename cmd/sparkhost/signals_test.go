package main

import (
	"bufio"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMOnTheReadyLineStopsGracefully: a SIGTERM sent the moment the
// server says it listens (what a supervisor that restarts at once does)
// stops it the graceful way, exit status 0 — not by the signal's default
// action, which it was when the handler came after the ready lines.
func TestSIGTERMOnTheReadyLineStopsGracefully(t *testing.T) {
	bin := buildBinary(t)
	for i := range 5 {
		cmd, stdout := startCommand(t, bin, "", "run", "--port", "0", "--bind", "127.0.0.1", "--data-dir", t.TempDir())
		done := make(chan error, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			signalled := false
			for sc.Scan() {
				if !signalled && strings.HasPrefix(sc.Text(), "sparkhost listening on ") {
					signalled = true
					_ = cmd.Process.Signal(syscall.SIGTERM)
				}
			}
			done <- cmd.Wait()
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run %d: SIGTERM on the ready line: %v (want a graceful stop, exit status 0)", i, err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("run %d: the server did not stop within 30 s of SIGTERM", i)
		}
	}
}
