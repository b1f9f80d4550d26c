package main

import "github.com/sparkhost/sparkhost/runtimes"

// The module runtimes this program links: the host finds them by kind and
// never imports them (ARCHITECTURE.md: runtimes are registered, not
// imported).
func init() { runtimes.Register() }
