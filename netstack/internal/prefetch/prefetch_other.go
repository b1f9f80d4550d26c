//go:build !amd64

package prefetch

func lines(start, count uintptr) {}
