//go:build !linux

package plugin

import "os"

// On systems other than Linux the SDK does not move file descriptor 1:
// keep writes to stdout out of a plugin's init functions.
var realStdout, realStderr = os.Stdout, os.Stderr
