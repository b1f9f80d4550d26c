package client

import (
	"errors"
	"io"
)

// ErrNoTerminal is returned by ReadSecret when the console does not read a
// terminal (a script, --exec, piped input): nobody can be asked.
var ErrNoTerminal = errors.New("no terminal to ask on; give it as an argument")

// ReadSecret asks the person at the console for a line without echoing it
// (a password): the terminal shows prompt, nothing of what is typed, and
// keeps it out of the history. Ctrl-C there returns ErrInterrupted (the
// command asking gives up; the console goes on). Outside an interactive
// terminal session it returns ErrNoTerminal.
func (c *Console) ReadSecret(prompt string) (string, error) {
	c.mu.Lock()
	ed := c.editor
	c.mu.Unlock()
	if ed == nil {
		return "", ErrNoTerminal
	}
	ctx := c.context()
	a, ok := ed.ask(ctx, lineRequest{secret: true, prompt: prompt})
	switch {
	case !ok:
		return "", ctx.Err()
	case a.interrupted:
		return "", ErrInterrupted
	case errors.Is(a.err, io.EOF):
		return "", errors.New("end of input")
	}
	return a.line, a.err
}
