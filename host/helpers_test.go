package host_test

import (
	"errors"
	"log/slog"
	"os"
	"testing"

	"github.com/sparkhost/sparkhost/host/testplugin"

	"github.com/sparkhost/sparkhost/netstack"
)

func asHandshake(err error, target **netstack.HandshakeError) bool { return errors.As(err, target) }

// testLogger discards logs unless SPARK_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("SPARK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

func TestMain(m *testing.M) {
	code := m.Run()
	testplugin.Cleanup()
	os.Exit(code)
}
