//go:build !unix

package main

import (
	"context"
	"io"
)

// watchHeapProfile: no SIGUSR1 here; the heap profile hook is off.
func watchHeapProfile(context.Context, io.Writer) {}
