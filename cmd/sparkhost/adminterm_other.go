//go:build !linux

package main

import (
	"io"
	"os"
)

// adminTerminal is the line-edited admin console, on Linux only; elsewhere
// the server reads its stdin line by line.
type adminTerminal struct {
	*os.File
	term    io.Writer
	restore func()
}

func openAdminTerminal(*os.File, io.Writer) (*adminTerminal, bool) { return nil, false }

// ReadLine is never called: openAdminTerminal never succeeds here.
func (a *adminTerminal) ReadLine() (string, error) { return "", io.EOF }
