package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/sparkhost/sparkhost/internal/cmdline"
)

// RunScript runs lines in order as Exec does and returns the exit code: 0 if
// every command succeeded (or quit was reached and left the server
// cleanly), 1 at the first failure. It
// stops at that failure, after printing "error: ..." — later commands
// usually depend on the failed one (a wait after a failed connect), and the
// first error is the one worth reading.
func (c *Console) RunScript(lines []string) int {
	for _, line := range lines {
		err := c.Exec(line)
		if errors.Is(err, ErrQuit) {
			return c.quitCode(err)
		}
		if err != nil {
			c.println("error: " + err.Error())
			return 1
		}
	}
	return 0
}

// RunInteractive reads command lines from in until quit, end of input or the
// end of ctx, and returns the exit code: 0 if every command succeeded, else 1.
// When in is a terminal (IsTerminal) it reads with line editing and history
// (the prompt "> "), reports a failed command and reads on; Ctrl-C discards
// the line being typed, Ctrl-D at an empty prompt leaves. Otherwise it runs
// in as a script and stops at the first failure, like RunScript. Waits and
// sleeps end early when ctx ends, or when Interrupt is called (that command
// fails; an interactive console reads on); ending ctx during a scripted run
// returns 1. A read of in blocked at that moment is left to the process's
// exit (an io.Reader cannot be interrupted).
func (c *Console) RunInteractive(ctx context.Context, in io.Reader) int {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopOnClose := context.AfterFunc(c.ctx, cancel)
	defer stopOnClose()
	if f, ok := in.(*os.File); ok && IsTerminal(f) {
		return c.runTerminal(runCtx, f)
	}
	lines, want := make(chan string), make(chan struct{})
	go readLines(runCtx, in, want, lines)
	c.setRunContext(runCtx)
	defer c.setRunContext(nil)
	for {
		select {
		case want <- struct{}{}:
		case <-runCtx.Done():
			return 1
		}
		var line string
		var ok bool
		select {
		case <-runCtx.Done():
			return 1
		case line, ok = <-lines:
		}
		if !ok {
			return 0
		}
		err := c.runLine(runCtx, line)
		switch {
		case errors.Is(err, ErrQuit):
			return c.quitCode(err)
		case err != nil:
			c.println("error: " + err.Error())
			return 1
		}
	}
}

// runTerminal is RunInteractive at a terminal, with the line editor.
func (c *Console) runTerminal(ctx context.Context, f *os.File) int {
	if state, err := term.GetState(int(f.Fd())); err == nil {
		// A line read blocked when ctx ends keeps raw mode: undo it.
		defer term.Restore(int(f.Fd()), state)
	}
	c.outMu.Lock()
	ed := newLineEditor(f, c.out)
	c.out = ed.term // output between prompts redraws the line being typed
	c.outMu.Unlock()
	go ed.serve(ctx)
	c.mu.Lock()
	c.editor = ed
	c.mu.Unlock()
	c.setRunContext(ctx)
	defer func() {
		c.setRunContext(nil)
		c.mu.Lock()
		c.editor = nil
		c.mu.Unlock()
		c.outMu.Lock()
		c.out = c.cfg.Out
		c.outMu.Unlock()
	}()
	code := 0
	for {
		a, ok := ed.ask(ctx, lineRequest{})
		switch {
		case !ok:
			c.println("")
			return code
		case a.interrupted:
			c.println("(line discarded; type quit or press Ctrl-D to leave)")
			continue
		case a.err != nil:
			if !errors.Is(a.err, io.EOF) {
				c.println("error: reading the terminal: " + a.err.Error())
			}
			return code
		}
		err := c.runLine(ctx, a.line)
		switch {
		case errors.Is(err, ErrQuit):
			return max(code, c.quitCode(err))
		case err != nil:
			c.println("error: " + err.Error())
			code = 1
		}
	}
}

// quitCode is the exit code of a quit: 1, after printing why, when it did
// not leave the server cleanly (what was sent was not all confirmed).
func (c *Console) quitCode(err error) int {
	if err == ErrQuit {
		return 0
	}
	c.println("error: " + err.Error())
	return 1
}

// runLine runs one command line under a context of its own, which
// Interrupt ends.
func (c *Console) runLine(ctx context.Context, line string) error {
	cmdCtx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.runCtx, c.interrupt = cmdCtx, cancel
	c.mu.Unlock()
	defer func() {
		cancel()
		c.mu.Lock()
		c.runCtx, c.interrupt = ctx, nil
		c.mu.Unlock()
	}()
	return c.Exec(line)
}

// setRunContext sets the context commands block under (nil: the console's).
func (c *Console) setRunContext(ctx context.Context) {
	c.mu.Lock()
	c.runCtx = ctx
	c.mu.Unlock()
}

// Interrupt ends the command RunInteractive is running now (its wait,
// sleep, room request or password prompt fails) and nothing else: the
// console reads its next line. Without a running command it does nothing.
// Programs call it on SIGINT when the console reads a terminal.
func (c *Console) Interrupt() {
	c.mu.Lock()
	stop := c.interrupt
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// readLines reads one line of in for each request on want and sends it to
// lines; it closes lines at the end of input. Reading only on request
// leaves the rest of the input unread while a command runs.
func readLines(ctx context.Context, in io.Reader, want <-chan struct{}, lines chan<- string) {
	defer close(lines)
	sc := bufio.NewScanner(in)
	for {
		select {
		case <-want:
		case <-ctx.Done():
			return
		}
		if !sc.Scan() {
			return
		}
		select {
		case lines <- sc.Text():
		case <-ctx.Done():
			return
		}
	}
}

// SplitWords splits a command line into words like a shell: white space
// separates words, '...' is literal, "..." allows \" and \\ (other
// backslashes are kept), and a backslash outside quotes escapes the next
// character. An unterminated quote is an error. The admin console uses the
// same rules (package cmdline).
func SplitWords(line string) ([]string, error) { return cmdline.SplitLine(line) }

// SplitScript splits a script into command lines at ';' and newlines that are
// not quoted or escaped, as `sparkhost client --exec "connect ...; say hi"`
// needs. Quotes are kept in each piece for Exec to split; blank pieces are
// dropped. An unterminated quote is an error.
func SplitScript(text string) ([]string, error) {
	var cmds []string
	start := 0
	var quote byte // 0, '\'' or '"'
	for i := 0; i < len(text); i++ {
		ch := text[i]
		switch {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			}
		case quote == '"':
			if ch == '\\' {
				i++
			} else if ch == '"' {
				quote = 0
			}
		case ch == '\\':
			i++
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == ';' || ch == '\n':
			cmds = appendCommand(cmds, text[start:i])
			start = i + 1
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in the script; close it with %c", quote, quote)
	}
	return appendCommand(cmds, text[min(start, len(text)):]), nil
}

func appendCommand(cmds []string, s string) []string {
	if s = strings.TrimSpace(s); s != "" {
		cmds = append(cmds, s)
	}
	return cmds
}
