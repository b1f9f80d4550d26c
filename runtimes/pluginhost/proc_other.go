//go:build !linux

package pluginhost

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// lowerPriority has no portable form here: plugins keep the server's
// priority.
func lowerPriority(pid, nice int) error { return nil }
