//go:build !linux

package transport

import "net"

// Batched system calls are Linux's; elsewhere every read and write moves one
// datagram (through the AddrPort methods, which do not allocate).
type (
	sysReader struct{ hdrs []struct{} }
	sysWriter struct{}
)

func newSysReader(*net.UDPConn, int) *sysReader { return nil }
func newSysWriter(*net.UDPConn, int) *sysWriter { return nil }

func (*sysReader) read([]Message) (int, error)  { return 0, nil }
func (*sysWriter) write([]Message) (int, error) { return 0, nil }
