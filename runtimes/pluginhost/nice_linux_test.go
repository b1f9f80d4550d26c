package pluginhost_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/runtimes/pluginhost"
	"golang.org/x/sys/unix"
)

// TestPluginRunsAtALowerPriority: with Nice 7 every thread of the plugin
// process — those it had at start and those its runtime started while it
// worked — runs at the server's nice value + 7; with Nice 0 at the
// server's.
func TestPluginRunsAtALowerPriority(t *testing.T) {
	own := 20 - must(unix.Getpriority(unix.PRIO_PROCESS, 0)) // the raw syscall returns 20 − nice
	if own+7 > 19 {
		t.Skipf("the test runs at nice %d already", own)
	}
	for _, nice := range []int{7, 0} {
		t.Run(fmt.Sprint("nice ", nice), func(t *testing.T) {
			m, h, _ := start(t, hostilePkg, func(c *pluginhost.Config) { c.Nice = nice })
			if err := m.Step(tick(1), []module.Event{h.admit(1, "alice")}); err != nil {
				t.Fatal(err)
			}
			for n := 2; n < 30; n++ { // some work, so that its runtime may start threads
				if err := m.Step(tick(uint64(n)), []module.Event{poke(n)}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond)
			}
			tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", m.Pid()))
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range tasks {
				tid, _ := strconv.Atoi(task.Name())
				raw, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
				if err != nil {
					continue // the thread ended
				}
				if got := 20 - raw; got != own+nice {
					t.Errorf("plugin thread %d runs at nice %d, want %d (the server's %d + %d)", tid, got, own+nice, own, nice)
				}
			}
			t.Logf("%d threads at nice %d", len(tasks), own+nice)
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
