package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

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
// When in is a terminal it prints the prompt "> ", reports a failed command
// and reads on; otherwise it runs in as a script and stops at the first
// failure, like RunScript. Waits and sleeps end early when ctx ends; ending
// ctx during a scripted run returns 1. A read of in blocked at that moment
// is left to the process's exit (an io.Reader cannot be interrupted).
func (c *Console) RunInteractive(ctx context.Context, in io.Reader) int {
	terminal := isTerminal(in)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopOnClose := context.AfterFunc(c.ctx, cancel)
	defer stopOnClose()
	lines, want := make(chan string), make(chan struct{})
	go readLines(runCtx, in, want, lines)
	c.mu.Lock()
	c.runCtx = runCtx
	if terminal {
		c.input = &terminalInput{in: in, want: want, lines: lines, ctx: runCtx}
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.runCtx, c.input = nil, nil
		c.mu.Unlock()
	}()

	code := 0
	for {
		if terminal {
			c.prompt()
		}
		var line string
		var ok bool
		select {
		case want <- struct{}{}:
		case <-runCtx.Done():
		}
		select {
		case <-runCtx.Done():
			if terminal {
				c.endPrompt()
				return code
			}
			return 1
		case line, ok = <-lines:
		}
		if !ok {
			if terminal {
				c.endPrompt()
			}
			return code
		}
		if terminal {
			c.promptAnswered()
		}
		err := c.Exec(line)
		switch {
		case errors.Is(err, ErrQuit):
			return max(code, c.quitCode(err))
		case err != nil:
			c.println("error: " + err.Error())
			if !terminal {
				return 1
			}
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

// readLines reads one line of in for each request on want and sends it to
// lines; it closes lines at the end of input. Reading only on request keeps
// the terminal free while a command runs, so a command can ask for a line
// itself (Console.ReadSecret) without a second reader racing for it.
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
