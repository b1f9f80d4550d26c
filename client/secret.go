package client

import (
	"context"
	"errors"
	"io"
)

// ErrNoTerminal is returned by ReadSecret when the console does not read a
// terminal (a script, --exec, piped input): nobody can be asked.
var ErrNoTerminal = errors.New("no terminal to ask on; give it as an argument")

// terminalInput is the interactive console's input, lent to a command that
// asks for a line of its own.
type terminalInput struct {
	in    io.Reader
	want  chan<- struct{}
	lines <-chan string
	ctx   context.Context
}

// ReadSecret asks the person at the console for a line without echoing it
// (a password): it prints prompt, turns the terminal's echo off, reads one
// line from the console's own input and turns echo back on. Outside an
// interactive terminal session it returns ErrNoTerminal.
func (c *Console) ReadSecret(prompt string) (string, error) {
	c.mu.Lock()
	ti := c.input
	c.mu.Unlock()
	if ti == nil {
		return "", ErrNoTerminal
	}
	restore, err := echoOff(ti.in)
	if err != nil {
		return "", ErrNoTerminal
	}
	defer restore()
	c.outMu.Lock()
	io.WriteString(c.out, prompt)
	c.outMu.Unlock()
	defer func() {
		c.outMu.Lock()
		io.WriteString(c.out, "\n") // the newline the terminal did not echo
		c.outMu.Unlock()
	}()
	select {
	case ti.want <- struct{}{}:
	case _, ok := <-ti.lines: // closed: the input has ended (the reader never sends unasked)
		if !ok {
			return "", errors.New("end of input")
		}
	case <-ti.ctx.Done():
		return "", ti.ctx.Err()
	}
	select {
	case line, ok := <-ti.lines:
		if !ok {
			return "", errors.New("end of input")
		}
		return line, nil
	case <-ti.ctx.Done():
		return "", ti.ctx.Err()
	}
}
