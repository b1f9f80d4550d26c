package netrig

import (
	"os"
	"testing"
)

// TestMain lets the rig run this test binary again inside a namespace as an
// echo server (Node.StartEcho).
func TestMain(m *testing.M) {
	ServeEchoIfAsked()
	os.Exit(m.Run())
}
