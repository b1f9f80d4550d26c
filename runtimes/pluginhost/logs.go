package pluginhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// logBridge turns what go-plugin logs (its own records and the plugin's
// stderr, which the SDK writes as hclog JSON) into records of the server's
// slog logger, carrying the module's name and the record's level.
// go-plugin's own chatter (starting, handshake, process exited) goes to
// Debug: the manager logs crashes and restarts itself.
//
// Every line the plugin writes — its log records, its stdout and stderr —
// spends from one lineBudget; past it the line is dropped and counted, and
// the drops are summarised in one Warn line per summaryEvery.
type logBridge struct {
	base   *slog.Logger
	name   atomic.Pointer[string] // the module's name (its source until Init answers)
	budget *lineBudget
	// mark is how go-plugin tags the records of the lines the plugin
	// wrote: its logger named after the executable, under ours ("plugin").
	// go-plugin's own records (plugin.stdio, ...) spend no budget.
	mark    []byte
	mu      sync.Mutex
	buf     []byte
	inPanic bool // the plugin printed a panic: the trace lines follow
}

func newLogBridge(base *slog.Logger, name, executable string, perSecond float64, burst int) *logBridge {
	b := &logBridge{base: base, mark: []byte(`"@module":"plugin.` + filepath.Base(executable) + `"`)}
	b.setName(name)
	b.budget = newLineBudget(perSecond, burst, b.summarize)
	return b
}

// summarize logs how many lines the budget dropped.
func (b *logBridge) summarize(n uint64) {
	name := *b.name.Load()
	b.base.Warn(fmt.Sprintf("module %s logs too much: %d lines dropped over its limit of %g a second (bursts of %d)",
		name, n, b.budget.rate, int(b.budget.burst)), "module", name, "dropped", n)
}

// dropped counts the lines dropped over the budget so far.
func (b *logBridge) dropped() uint64 {
	if b == nil {
		return 0
	}
	return b.budget.total.Load()
}

// close reports the drops not yet summarised (the plugin is gone).
func (b *logBridge) close() {
	if b != nil {
		b.budget.close()
	}
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
		b.line(b.buf[:i])
		b.buf = b.buf[i+1:]
	}
	if len(b.buf) > 1<<20 { // a runaway line: log what there is
		b.line(b.buf)
		b.buf = b.buf[:0]
	}
	return len(p), nil
}

// line emits one record, unless it is the plugin's and over budget: the
// check comes before the record is parsed, so a flood costs little.
func (b *logBridge) line(rec []byte) {
	if bytes.Contains(rec, b.mark) && !b.budget.allow() {
		return
	}
	b.emit(rec)
}

func (b *logBridge) emit(line []byte) {
	rec, err := decodeRecord(line)
	if err != nil {
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

// decodeRecord parses one JSON record, keeping integers integers (a plain
// Unmarshal makes every number a float64: rows=1.2345678e+07).
func decodeRecord(line []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var rec map[string]any
	if err := d.Decode(&rec); err != nil {
		return nil, err
	}
	for k, v := range rec {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				rec[k] = i
			} else if f, err := n.Float64(); err == nil {
				rec[k] = f
			}
		}
	}
	return rec, nil
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
		if l.b.budget.allow() {
			l.b.log().Info(string(l.buf[:i]), "stream", l.stream)
		}
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64<<10 {
		if l.b.budget.allow() {
			l.b.log().Info(string(l.buf), "stream", l.stream)
		}
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

// summaryEvery is how often dropped log lines are summarised (at most one
// line per interval, only when lines were dropped).
const summaryEvery = time.Second

// lineBudget is a token bucket of log lines: burst lines at once, refilled
// at rate a second. Safe for concurrent use (stdout, stderr and the log
// records are read by different goroutines).
type lineBudget struct {
	rate, burst float64
	summarize   func(n uint64)
	total       atomic.Uint64 // lines dropped in all

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	pending uint64 // dropped since the last summary
	timer   *time.Timer
	closed  bool
}

func newLineBudget(rate float64, burst int, summarize func(uint64)) *lineBudget {
	return &lineBudget{rate: rate, burst: float64(burst), tokens: float64(burst), summarize: summarize}
}

// allow spends one line, or counts it dropped and schedules the summary.
func (l *lineBudget) allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		return true
	}
	l.pending++
	l.total.Add(1)
	if l.timer == nil && !l.closed {
		l.timer = time.AfterFunc(summaryEvery, l.flush)
	}
	return false
}

// flush summarises the lines dropped since the last summary.
func (l *lineBudget) flush() {
	l.mu.Lock()
	n := l.pending
	l.pending, l.timer = 0, nil
	l.mu.Unlock()
	if n > 0 {
		l.summarize(n)
	}
}

// close stops the summaries after a last one.
func (l *lineBudget) close() {
	l.mu.Lock()
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	l.flush()
}
