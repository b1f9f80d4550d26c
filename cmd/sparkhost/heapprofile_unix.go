//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"syscall"
)

// heapProfileEnv names the file `sparkhost run` writes a heap profile to
// on SIGUSR1 (off when unset): a diagnostic for memory per session
// (docs/performance.md).
const heapProfileEnv = "SPARKHOST_HEAPPROFILE"

// heapProfileRateEnv sets runtime.MemProfileRate (bytes allocated per
// sample; Go's default 512 KiB) with SPARKHOST_HEAPPROFILE: per-session
// state of tens of kB needs a few KiB, which costs CPU on every
// allocation — not for a run whose CPU is measured.
const heapProfileRateEnv = "SPARKHOST_HEAPPROFILE_RATE"

// watchHeapProfile, when SPARKHOST_HEAPPROFILE is set, writes a heap
// profile there (and the goroutines' stacks to the same name plus
// ".goroutines") on each SIGUSR1 after a garbage collection that also
// returns freed memory to the OS (debug.FreeOSMemory), so that the RSS
// read after the file appears is the live heap's.
func watchHeapProfile(ctx context.Context, stderr io.Writer) {
	path := os.Getenv(heapProfileEnv)
	if path == "" {
		return
	}
	if rate, err := strconv.Atoi(os.Getenv(heapProfileRateEnv)); err == nil && rate > 0 {
		runtime.MemProfileRate = rate
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(sig)
		for {
			select {
			case <-ctx.Done():
				return
			case <-sig:
				if err := writeHeapProfile(path); err != nil {
					fmt.Fprintf(stderr, "sparkhost: heap profile not written (%s): %v\n", heapProfileEnv, err)
				}
			}
		}
	}()
}

// writeHeapProfile writes the profile beside path and renames it there,
// so that a reader never sees half of one.
func writeHeapProfile(path string) error {
	runtime.GC()
	debug.FreeOSMemory()
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := writeGoroutines(path + ".goroutines"); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// writeGoroutines writes the goroutines' stacks, counted by stack, beside
// the heap profile (written first, so that it is there when the profile
// appears).
func writeGoroutines(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("goroutine").WriteTo(f, 1); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
