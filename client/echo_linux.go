package client

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// echoOff turns off echo on the terminal r and returns the undo.
func echoOff(r io.Reader) (func(), error) {
	f, ok := r.(interface{ Fd() uintptr })
	if !ok {
		return nil, errors.New("not a terminal")
	}
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return nil, err
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
