package pluginhost

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

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

// lowerPriority raises the nice value of every thread of process pid by
// nice over the server's own (Linux keeps a nice value per thread, and a
// new thread or process inherits its creator's). Two passes over
// /proc/PID/task catch a thread started by one not yet lowered. A thread
// already at or below the target is left alone; raising a nice value needs
// no privilege.
func lowerPriority(pid, nice int) error {
	own, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		return err
	}
	// getpriority(2)'s raw value is 20 − nice.
	target := min(20-own+nice, 19)
	for range 2 {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return err
		}
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			if n, err := threadNice(tid); err != nil || n >= target {
				continue // gone, or already as low
			}
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, target); err != nil && err != unix.ESRCH {
				return err
			}
		}
	}
	return nil
}

// threadNice returns the nice value of thread tid.
func threadNice(tid int) (int, error) {
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	return 20 - raw, err
}
