package plugin

import (
	"os"

	"github.com/sparkhost/sparkhost/internal/pluginwire"

	"golang.org/x/sys/unix"
)

// realStdout is the process's original stdout, kept for the go-plugin
// handshake line (and describe). In a process started as a plugin (the
// server's cookie is in its environment), file descriptor 1 itself now
// points at stderr, so a stray write to stdout, even by C code or before
// Serve, cannot corrupt the handshake. Any other program that links the SDK
// (the sparkhost binary, whose built-in modules use it) keeps its stdout. realStderr is the original stderr, where
// the SDK's log records go (go-plugin later swaps os.Stderr for a pipe).
var realStdout, realStderr = guardStdout()

func guardStdout() (*os.File, *os.File) {
	stderr := os.Stderr
	if os.Getenv(pluginwire.CookieKey) != pluginwire.CookieValue {
		return os.Stdout, stderr
	}
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
