package pluginhost

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// logBridge turns what go-plugin logs (its own records and the plugin's
// stderr, which the SDK writes as hclog JSON) into records of the server's
// slog logger, carrying the module's name and the record's level.
// go-plugin's own chatter (starting, handshake, process exited) goes to
// Debug: the manager logs crashes and restarts itself.
type logBridge struct {
	base    *slog.Logger
	name    atomic.Pointer[string] // the module's name (its source until Init answers)
	mu      sync.Mutex
	buf     []byte
	inPanic bool // the plugin printed a panic: the trace lines follow
}

func newLogBridge(base *slog.Logger, name string) *logBridge {
	b := &logBridge{base: base}
	b.setName(name)
	return b
}

func (b *logBridge) setName(name string) { b.name.Store(&name) }

// log returns the server's logger with the module's current name.
func (b *logBridge) log() *slog.Logger { return b.base.With("module", *b.name.Load()) }

// hclog returns the logger to hand go-plugin.
func (b *logBridge) hclog() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Trace, Output: b, JSONFormat: true})
}

// Write takes hclog JSON lines.
func (b *logBridge) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	for {
		i := bytes.IndexByte(b.buf, '\n')
		if i < 0 {
			break
		}
		b.emit(b.buf[:i])
		b.buf = b.buf[i+1:]
	}
	if len(b.buf) > 1<<20 { // a runaway line: log what there is
		b.emit(b.buf)
		b.buf = b.buf[:0]
	}
	return len(p), nil
}

func (b *logBridge) emit(line []byte) {
	var rec map[string]any
	if err := json.Unmarshal(line, &rec); err != nil {
		b.log().Debug(string(line))
		return
	}
	msg, _ := rec["@message"].(string)
	lvl, _ := rec["@level"].(string)
	from, _ := rec["@module"].(string)
	level := slog.LevelDebug
	fromPlugin := strings.HasPrefix(from, "plugin.") // the plugin's stderr, named after its file
	if fromPlugin {
		level = levelOf(lvl)
		switch {
		case strings.HasPrefix(msg, "panic: ") || strings.HasPrefix(msg, "fatal error: "):
			b.inPanic = true
		case b.inPanic && len(rec) <= 4: // a plain trace line, not a record of the SDK's
			level = slog.LevelDebug
		}
	} else if lvl == "error" && msg != "plugin process exited" {
		level = slog.LevelWarn
	}
	// The SDK names the module in every record (it knows the name before
	// the server does, during Init); other lines carry the current name.
	name := *b.name.Load()
	if v, ok := rec["module"].(string); ok && fromPlugin && v != "" {
		name = v
	}
	attrs := []any{"module", name}
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		switch k {
		case "@message", "@level", "@module", "@timestamp", "timestamp", "@caller", "module":
			continue
		}
		attrs = append(attrs, k, rec[k])
	}
	if !fromPlugin {
		attrs = append(attrs, "source", "go-plugin")
	}
	b.base.Log(context.Background(), level, msg, attrs...)
}

func levelOf(s string) slog.Level {
	switch s {
	case "trace", "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// lines returns a writer that logs each line the plugin writes to its
// stdout or stderr after the handshake (os.Stdout / os.Stderr in the
// plugin), at Info, tagged with the stream.
func (b *logBridge) lines(stream string) io.Writer {
	return &lineLogger{b: b, stream: stream}
}

type lineLogger struct {
	b      *logBridge
	stream string
	mu     sync.Mutex
	buf    []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.b.log().Info(string(l.buf[:i]), "stream", l.stream)
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64<<10 {
		l.b.log().Info(string(l.buf), "stream", l.stream)
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

// tailWriter keeps the last lines the plugin wrote to its real stderr, to
// tell why it died (a panic message, a fatal error).
type tailWriter struct {
	mu    sync.Mutex
	lines []string
	cur   []byte
	max   int
}

func newTailWriter(n int) *tailWriter { return &tailWriter{max: n} }

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range p {
		if c == '\n' {
			t.lines = append(t.lines, string(t.cur))
			if len(t.lines) > t.max {
				t.lines = t.lines[1:]
			}
			t.cur = t.cur[:0]
			continue
		}
		if len(t.cur) < 4096 {
			t.cur = append(t.cur, c)
		}
	}
	return len(p), nil
}

// crash returns the last panic or fatal error line, with the function that
// panicked when the trace shows it, or "".
func (t *tailWriter) crash() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.lines) - 1; i >= 0; i-- {
		l := t.lines[i]
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return strings.TrimSuffix(l, " [recovered]")
		}
	}
	return ""
}
