//go:build !linux

package pluginhost

// groupResident cannot measure here: no memory watchdog.
func groupResident(int) (int64, bool) { return 0, false }
