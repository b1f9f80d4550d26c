package netrig

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// openTUN creates a TUN device named name in the node's namespace and
// returns its descriptor (non-blocking; IP packets without a header,
// IFF_NO_PI). The device lives as long as the descriptor: if this process
// dies, the kernel removes it.
func (n *Node) openTUN(name string) (int, error) {
	tun := -1
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
		tun = fd
		return nil
	})
	return tun, err
}
