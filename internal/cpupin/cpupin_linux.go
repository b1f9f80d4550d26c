package cpupin

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Process binds every thread of this process — and so every thread and
// process those start later — to cpu. sched_setaffinity with pid 0 binds
// only the calling thread: the Go runtime's other threads, started before,
// would keep running anywhere. A second pass catches a thread started by
// one not yet bound.
func Process(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("cannot list this process's threads: %w", err)
		}
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("cannot pin thread %d to CPU %d: %w", tid, cpu, err)
			}
		}
	}
	return nil
}
