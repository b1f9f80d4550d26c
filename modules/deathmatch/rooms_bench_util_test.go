package deathmatch_test

import (
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The rooms load benchmark's measuring tools: pinning, this process's CPU
// time and resident memory, a CPU profile of the measured window.

// processCPU is the CPU time this process used so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// residentKiB is this process's resident memory (VmRSS), 0 if unknown.
func residentKiB() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// profileServer writes a CPU profile of this process (the server) to
// SPARK_BENCH_ROOMS_CPUPROFILE, if set, until the returned stop.
func profileServer(tb testing.TB) (stop func()) {
	path := os.Getenv("SPARK_BENCH_ROOMS_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		tb.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// profilePlugin starts (SIGUSR1) or stops (SIGUSR2) the deathmatch
// plugin's CPU profile when DEATHMATCH_CPUPROFILE, which it inherits, is
// set; without it the signal would end the plugin.
func profilePlugin(sig syscall.Signal) {
	if os.Getenv("DEATHMATCH_CPUPROFILE") != "" {
		signalChildren("deathmatch-", sig)
	}
}

// signalChildren sends sig to this process's children whose command name
// starts with prefix.
func signalChildren(prefix string, sig syscall.Signal) {
	for _, pid := range children(prefix) {
		_ = syscall.Kill(pid, sig)
	}
}

// children are the pids of this process's children whose command name
// starts with prefix.
func children(prefix string) []int {
	var pids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if _, ok := childStat(pid, prefix); ok {
			pids = append(pids, pid)
		}
	}
	return pids
}

// childStat is the fields of /proc/pid/stat after the command name, if
// pid is a child of this process whose command name starts with prefix.
func childStat(pid int, prefix string) ([]string, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	// pid (comm) state ppid ...: a comm may hold spaces and parentheses.
	s := string(stat)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || !strings.HasPrefix(s[open+1:end], prefix) {
		return nil, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 13 || f[1] != strconv.Itoa(os.Getpid()) {
		return nil, false
	}
	return f, true
}

// childCPU is the CPU time (user and system) so far of this process's
// children whose command name starts with prefix (the deathmatch plugin,
// the bots), from /proc; 0 where it cannot be read.
func childCPU(prefix string) time.Duration {
	var total time.Duration
	for _, pid := range children(prefix) {
		if f, ok := childStat(pid, prefix); ok { // utime and stime: fields 14 and 15
			utime, _ := strconv.ParseInt(f[11], 10, 64)
			stime, _ := strconv.ParseInt(f[12], 10, 64)
			total += time.Duration(utime+stime) * time.Second / clockTicks
		}
	}
	return total
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times (100
// on Linux everywhere Go runs).
const clockTicks = 100

// childWaited is how long the threads of this process's children whose
// command name starts with prefix have waited, runnable, for a CPU
// (/proc/PID/task/TID/schedstat's second field): the bots' core taken by
// other processes shows here, not in their CPU time.
func childWaited(prefix string) time.Duration {
	var total time.Duration
	for _, pid := range children(prefix) {
		total += waited(pid)
	}
	return total
}

// waited is how long the threads of process pid have waited, runnable,
// for a CPU.
func waited(pid int) time.Duration {
	var total time.Duration
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/schedstat")
		if f := strings.Fields(string(b)); err == nil && len(f) >= 2 {
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}
