package discovery

import "syscall"

// setBroadcast sets SO_BROADCAST on the raw socket fd, without which Linux
// refuses to send to a broadcast address (EACCES).
func setBroadcast(fd uintptr) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_BROADCAST, 1)
}
