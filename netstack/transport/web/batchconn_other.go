//go:build !linux

package web

import "net"

// mmsgWriter: no sendmmsg on this system; a batchConn writes one packet at
// a time.
type mmsgWriter struct{}

func newMMsgWriter(*net.UDPConn) *mmsgWriter { return nil }

func (*mmsgWriter) write(*batchConn, []outPacket) {}
