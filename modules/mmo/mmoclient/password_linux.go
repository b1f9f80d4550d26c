package mmoclient

import (
	"bufio"
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// errNoTerminal: a password was omitted where nobody can be asked.
var errNoTerminal = errors.New("no terminal to ask for the password on; give it as the last argument")

// readPassword asks on the controlling terminal with echo off.
func readPassword(prompt string) (string, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return "", errNoTerminal
	}
	defer tty.Close()
	fd := int(tty.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", errNoTerminal
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return "", errNoTerminal
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)
	tty.WriteString(prompt)
	line, err := bufio.NewReader(tty).ReadString('\n')
	tty.WriteString("\n")
	if err != nil && line == "" {
		return "", errors.New("no password given")
	}
	return strings.TrimRight(line, "\r\n"), nil
}
