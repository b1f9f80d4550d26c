package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
)

// ProfileEnv names the environment variable that makes a plugin write a
// CPU profile of its whole life: set it to a directory (the server passes
// its environment on), and each plugin process writes
// DIR/NAME-PID.cpu.prof, flushed when the server shuts the module down. For
// a module author's performance work (`go tool pprof BINARY PROFILE`);
// nothing is written without it.
const ProfileEnv = "SPARKHOST_PLUGIN_CPUPROFILE"

var (
	profileMu   sync.Mutex
	profileFile *os.File
)

// startProfile starts the CPU profile ProfileEnv asks for, if any.
func startProfile(name string) {
	dir := os.Getenv(ProfileEnv)
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.cpu.prof", name, os.Getpid())))
	if err != nil {
		fmt.Fprintf(realStderr, "sparkhost plugin: no CPU profile: %v\n", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(realStderr, "sparkhost plugin: no CPU profile: %v\n", err)
		f.Close()
		return
	}
	profileMu.Lock()
	profileFile = f
	profileMu.Unlock()
}

// stopProfile flushes and closes the profile (once).
func stopProfile() {
	profileMu.Lock()
	defer profileMu.Unlock()
	if profileFile == nil {
		return
	}
	pprof.StopCPUProfile()
	profileFile.Close()
	profileFile = nil
}
