package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// botsCPUProfileEnv names the file `sparkhost bots` writes a CPU profile
// of its process to, from the moment every bot is connected to the end of
// the run (off when unset): a diagnostic of what a bot costs at load
// (docs/performance.md, rooms).
const botsCPUProfileEnv = "SPARKHOST_BOTS_CPUPROFILE"

// startBotsProfile starts the CPU profile SPARKHOST_BOTS_CPUPROFILE asks
// for and returns its stop; a profile that cannot be written is said on
// stderr and the run goes on without it.
func startBotsProfile(stderr io.Writer) (stop func()) {
	path := os.Getenv(botsCPUProfileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "sparkhost bots: no CPU profile (%s): %v\n", botsCPUProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
