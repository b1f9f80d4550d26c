package netrig

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openTUN creates a TUN device named name in the node's namespace and
// returns its file: IP packets without a header (IFF_NO_PI), read and
// written through the runtime's poller, so that closing the file ends a
// pending read. The device lives as long as the file: if this process
// dies, the kernel removes it.
func (n *Node) openTUN(name string) (*os.File, error) {
	var f *os.File
	err := n.Do(func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("netrig: open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			unix.Close(fd)
			return err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("netrig: create TUN %s in %s: %w", name, n.Name, err)
		}
		f = os.NewFile(uintptr(fd), "/dev/net/tun:"+name)
		return nil
	})
	return f, err
}
