package mmo_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// testLogger discards logs unless SPARK_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("SPARK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// testIterations is the SCRAM iteration count of the test players and of
// the test servers' current count (docs/mmo.md §7.5), so that logins are
// not followed by a verifier upgrade unless a test asks for one.
const testIterations = 4096

var iterationsKey = regexp.MustCompile(`(?m)^iterations\s*=`)

// testModuleConfig makes the module's config.toml in dataDir say
// iterations = testIterations unless it sets iterations itself.
func testModuleConfig(t testing.TB, dataDir string) {
	t.Helper()
	path := filepath.Join(dataDir, "modules", "mmo", "config.toml")
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if iterationsKey.Match(b) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// First, so that it is not inside a [table] of the file.
	b = append([]byte("iterations = 4096\n"), b...)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
