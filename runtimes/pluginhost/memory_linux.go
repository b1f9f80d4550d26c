package pluginhost

import (
	"bytes"
	"os"
	"strconv"
)

// groupResident is the resident size in bytes of pid and its descendants;
// false if pid itself cannot be read (it is gone).
func groupResident(pid int) (int64, bool) {
	var total int64
	todo := []int{pid}
	for n := 0; len(todo) > 0 && n < maxWatched; n++ {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		kb, ok := vmRSS(p)
		if !ok {
			if p == pid {
				return 0, false
			}
			continue
		}
		total += kb << 10
		todo = appendChildren(todo, p)
	}
	return total, true
}

var vmRSSKey = []byte("\nVmRSS:")

// vmRSS reads the VmRSS line of /proc/PID/status, in kB.
func vmRSS(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	i := bytes.Index(b, vmRSSKey)
	if i < 0 {
		return 0, true // a zombie or a kernel thread: nothing resident
	}
	line := b[i+len(vmRSSKey):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	f := bytes.Fields(line)
	if len(f) == 0 {
		return 0, true
	}
	kb, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, true
	}
	return kb, true
}

// appendChildren appends the child processes of every thread of pid.
func appendChildren(todo []int, pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return todo
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil && c > 0 {
				todo = append(todo, c)
			}
		}
	}
	return todo
}
