//go:build !linux

package discovery

import "errors"

func getsockoptInt(uintptr, int) (int, error) {
	return 0, errors.New("getsockopt is checked on Linux only")
}
