package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// adminTerminal is the server's stdin when it is a terminal: admin
// commands are read with golang.org/x/term's line editor (arrow keys,
// history on arrow-up, a "> " prompt redrawn below the log lines and
// answers written through it). The terminal keeps its signals (Ctrl-C is
// SIGINT: the server shuts down as before) and its output processing; only
// canonical mode and echo are off, which the editor does itself.
type adminTerminal struct {
	*os.File // satisfies io.Reader; the console reads lines with ReadLine
	term     *term.Terminal
	restore  func()
}

// openAdminTerminal puts stdin in that mode; ok is false (and nothing
// changed) when stdin is not a terminal.
func openAdminTerminal(stdin *os.File, out io.Writer) (*adminTerminal, bool) {
	fd := int(stdin.Fd())
	if !term.IsTerminal(fd) {
		return nil, false
	}
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, false
	}
	mode := *old
	mode.Lflag &^= unix.ICANON | unix.ECHO | unix.IEXTEN
	mode.Cc[unix.VMIN], mode.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &mode); err != nil {
		return nil, false
	}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{stdin, out}, "> ")
	if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
		_ = t.SetSize(w, h)
	}
	return &adminTerminal{File: stdin, term: t, restore: func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }}, true
}

// ReadLine reads one edited line (admin.LineReader); Ctrl-D at an empty
// prompt is io.EOF and ends the console, not the server.
func (a *adminTerminal) ReadLine() (string, error) { return a.term.ReadLine() }
