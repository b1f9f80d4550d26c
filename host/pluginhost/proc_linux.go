package pluginhost

import "syscall"

// sysProcAttr puts the plugin in its own process group (so it and any
// grandchildren can be killed together) and has the kernel kill it if the
// server dies (Pdeathsig; the SDK's parent watchdog covers the case where
// only the server's starting thread ends).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the plugin's whole process group.
func killGroup(pid int) {
	if pid > 0 {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
}
