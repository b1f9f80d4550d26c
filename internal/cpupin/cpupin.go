// Package cpupin binds a whole process to one CPU, for the benchmarks that
// measure what one server core holds: the server on one CPU, its load
// generator on the other.
package cpupin

import "errors"

// ErrUnsupported is Process's error where the platform cannot pin.
var ErrUnsupported = errors.New("cpupin: pinning a process to a CPU is not supported on this platform")

// Logger is what ProcessOrLog reports to (a *testing.B or *testing.T).
type Logger interface {
	Logf(format string, args ...any)
}

// ProcessOrLog is Process for a benchmark: where pinning fails it says so,
// and the run goes on with its figures sharing the cores.
func ProcessOrLog(l Logger, cpu int) {
	if err := Process(cpu); err != nil {
		l.Logf("%v: the figures share the cores", err)
	}
}
