package mmo_test

import (
	"log/slog"
	"os"
)

// testLogger discards logs unless SPARK_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("SPARK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}
