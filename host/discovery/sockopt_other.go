//go:build !linux

package discovery

import "errors"

// setBroadcast is implemented for Linux only; elsewhere a broadcast target is
// refused with ErrBroadcastUnavailable and unicast targets still work.
func setBroadcast(uintptr) error {
	return errors.New("SO_BROADCAST is only set on Linux")
}
