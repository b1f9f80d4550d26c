package plugin

import (
	"io"
	"log/slog"
	"strings"
)

// newLogger returns the module's logger: JSON lines in the hclog shape
// (@level, @message, @timestamp, then the attributes) on the original
// stderr, which go-plugin parses on the server side and hands to the
// server's log with the module's name and the record's level. Everything
// is passed through; the server's log level decides what is kept. A
// time.Duration travels as its text ("1.5s"), which JSON has no type for.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				// JSON would carry nanoseconds, which the server reads
				// back as a bare number (lease=1e+10): send "10s".
				return slog.String(a.Key, a.Value.Duration().String())
			}
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("@timestamp", a.Value.Time().Format("2006-01-02T15:04:05.000000Z07:00"))
			case slog.LevelKey:
				return slog.String("@level", strings.ToLower(a.Value.String()))
			case slog.MessageKey:
				return slog.String("@message", a.Value.String())
			}
			return a
		},
	}))
}
