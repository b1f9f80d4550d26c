package plugin

import (
	"os"

	"golang.org/x/sys/unix"
)

// realStdout is the process's original stdout, kept for the go-plugin
// handshake line (and describe); file descriptor 1 itself now points at
// stderr, so a stray write to stdout, even by C code or before Serve,
// cannot corrupt the handshake. realStderr is the original stderr, where
// the SDK's log records go (go-plugin later swaps os.Stderr for a pipe).
var realStdout, realStderr = guardStdout()

func guardStdout() (*os.File, *os.File) {
	stderr := os.Stderr
	fd, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return os.Stdout, stderr
	}
	if err := unix.Dup3(2, 1, 0); err != nil {
		unix.Close(fd)
		return os.Stdout, stderr
	}
	return os.NewFile(uintptr(fd), "/dev/stdout"), stderr
}
