package admin

import "github.com/sparkhost/sparkhost/internal/cmdline"

// ErrSyntax is wrapped by the errors of a line that does not split (a quote
// left open, a trailing lone backslash).
var ErrSyntax = cmdline.ErrSyntax

// SplitLine splits an admin command line into words (POSIX-shell quoting,
// no expansion); see package cmdline.
func SplitLine(line string) ([]string, error) { return cmdline.SplitLine(line) }

// JoinLine quotes words so that SplitLine gives them back.
func JoinLine(words []string) string { return cmdline.JoinLine(words) }
