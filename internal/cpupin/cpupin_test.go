package cpupin

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestProcessPinsEveryThread: after Process, every thread of the process
// may run only on the CPU given (read back from /proc).
func TestProcessPinsEveryThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	cpu := runtime.NumCPU() - 1
	if err := Process(cpu); err != nil {
		t.Skipf("cannot pin here: %v", err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // the thread ended meanwhile
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				if got, want := strings.TrimSpace(v), strconv.Itoa(cpu); got != want {
					t.Errorf("thread %s may run on %q, want %q", task.Name(), got, want)
				}
			}
		}
	}
}
