//go:build !linux

package cpupin

// Process is not supported here: the figures share the cores.
func Process(cpu int) error { return ErrUnsupported }
