package host

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// NewLogger builds the server's structured logger: text to stderr and, when
// file is set, JSON lines appended to that file (mode 0600). The returned
// close function flushes and closes the file.
func NewLogger(level, file string, stderr io.Writer) (*slog.Logger, func() error, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, nil, fmt.Errorf("logging.level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	handlers := []slog.Handler{slog.NewTextHandler(stderr, opts)}
	closeFn := func() error { return nil }
	if file != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return nil, nil, fmt.Errorf("logging.file: %w", err)
		}
		f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("logging.file: %w", err)
		}
		handlers = append(handlers, slog.NewJSONHandler(f, opts))
		closeFn = func() error {
			if err := f.Sync(); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}
	}
	return slog.New(slog.NewMultiHandler(handlers...)), closeFn, nil
}
