//go:build unix

package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// cpuProfileEnv names the file the plugin writes a CPU profile to between
// a SIGUSR1 (start) and a SIGUSR2 (stop), when set: a diagnostic of what
// the rooms cost the plugin's process at load (docs/performance.md). The
// plugin inherits the server's environment.
const cpuProfileEnv = "DEATHMATCH_CPUPROFILE"

// watchProfile starts and stops the CPU profile on the signals.
func watchProfile() {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		var f *os.File
		for s := range sig {
			switch {
			case s == syscall.SIGUSR1 && f == nil:
				var err error
				if f, err = os.Create(path); err == nil {
					err = pprof.StartCPUProfile(f)
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "deathmatch: no CPU profile (%s): %v\n", cpuProfileEnv, err)
					f = nil
				}
			case s == syscall.SIGUSR2 && f != nil:
				pprof.StopCPUProfile()
				f.Close()
				f = nil
			}
		}
	}()
}
