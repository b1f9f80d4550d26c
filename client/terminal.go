package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/term"
)

// The interactive console at a terminal reads its lines with
// golang.org/x/term's Terminal: the arrow keys, Home/End (Ctrl-A/Ctrl-E),
// Ctrl-U/Ctrl-K/Ctrl-W edit the line, arrow-up and arrow-down recall
// earlier lines, and output printed while a line is typed appears above it
// (the Terminal redraws the prompt and the line). The terminal is in raw
// mode only while a line is read: while a command runs it is as the shell
// left it, so Ctrl-C there is SIGINT, which the program turns into
// Interrupt (that command ends, not the console). In raw mode Ctrl-C is a
// key: it discards the line being typed, or cancels a password prompt.

// ErrInterrupted is returned by ReadSecret when the person pressed Ctrl-C
// at the prompt: the command asking should give up.
var ErrInterrupted = errors.New("cancelled (Ctrl-C)")

// historySize bounds the lines arrow-up recalls.
const historySize = 500

// IsTerminal reports whether r is an interactive terminal (not a pipe, a
// file or /dev/null): RunInteractive reads it with line editing.
func IsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// lineEditor lends the terminal to whoever asks for a line: the console's
// loop (a command line) or a command (ReadSecret). One goroutine reads, on
// request only, so nothing races for the terminal.
type lineEditor struct {
	fd   int
	term *term.Terminal
	in   *interruptReader
	reqs chan lineRequest
}

type lineRequest struct {
	secret bool
	prompt string // the password prompt (a command line uses the console's)
	answer chan lineAnswer
}

type lineAnswer struct {
	line        string
	err         error // io.EOF: Ctrl-D at an empty line, or the end of input
	interrupted bool  // Ctrl-C: the line was discarded
}

func newLineEditor(f *os.File, out io.Writer) *lineEditor {
	in := &interruptReader{r: f}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{in, out}, promptText)
	t.History = &history{}
	return &lineEditor{fd: int(f.Fd()), term: t, in: in, reqs: make(chan lineRequest)}
}

// serve answers line requests until ctx ends. A read blocked at that moment
// ends with the process (a terminal read cannot be interrupted); the
// caller restores the terminal's mode itself.
func (e *lineEditor) serve(ctx context.Context) {
	for {
		select {
		case req := <-e.reqs:
			req.answer <- e.read(req)
		case <-ctx.Done():
			return
		}
	}
}

// read reads one line in raw mode.
func (e *lineEditor) read(req lineRequest) lineAnswer {
	if w, h, err := term.GetSize(e.fd); err == nil && w > 0 && h > 0 {
		_ = e.term.SetSize(w, h) // a terminal that tells no size keeps 80x24
	}
	old, err := term.MakeRaw(e.fd)
	if err != nil {
		return lineAnswer{err: err}
	}
	defer term.Restore(e.fd, old)
	e.in.interrupted.Store(false)
	var line string
	if req.secret {
		line, err = e.term.ReadPassword(req.prompt)
	} else {
		line, err = e.term.ReadLine()
	}
	return lineAnswer{line: line, err: err, interrupted: e.in.interrupted.Swap(false)}
}

// ask requests a line and waits for it; false when ctx ended first.
func (e *lineEditor) ask(ctx context.Context, req lineRequest) (lineAnswer, bool) {
	req.answer = make(chan lineAnswer, 1)
	select {
	case e.reqs <- req:
	case <-ctx.Done():
		return lineAnswer{}, false
	}
	select {
	case a := <-req.answer:
		return a, true
	case <-ctx.Done():
		return lineAnswer{}, false
	}
}

// interruptReader turns the Ctrl-C key into "end of line, erase it, Enter"
// (Ctrl-E Ctrl-U CR), so the Terminal returns an empty line with its state
// reset (a password typed so far is gone, never redrawn), and notes the
// interrupt. What was typed after the Ctrl-C in the same read is dropped,
// as a terminal's own interrupt flushes its input.
type interruptReader struct {
	r           io.Reader
	pending     []byte
	interrupted atomic.Bool
}

const ctrlC = 3

var discardLine = []byte{5, 21, '\r'} // Ctrl-E, Ctrl-U, Enter

func (ir *interruptReader) Read(p []byte) (int, error) {
	if len(ir.pending) > 0 {
		n := copy(p, ir.pending)
		ir.pending = ir.pending[n:]
		return n, nil
	}
	n, err := ir.r.Read(p)
	i := bytes.IndexByte(p[:n], ctrlC)
	if i < 0 {
		return n, err
	}
	ir.interrupted.Store(true)
	m := copy(p[i:], discardLine)
	ir.pending = append(ir.pending[:0], discardLine[m:]...)
	return i + m, err
}

// history is the arrow-up memory: the last historySize lines, without
// blank lines or a repeat of the line before.
type history struct {
	lines []string // oldest first
}

func (h *history) Add(line string) {
	if line == "" || len(h.lines) > 0 && h.lines[len(h.lines)-1] == line {
		return
	}
	if len(h.lines) == historySize {
		h.lines = append(h.lines[:0], h.lines[1:]...)
	}
	h.lines = append(h.lines, line)
}

func (h *history) Len() int { return len(h.lines) }

// At returns the idx-th most recent line (0: the last).
func (h *history) At(idx int) string { return h.lines[len(h.lines)-1-idx] }
