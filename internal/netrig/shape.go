package netrig

import (
	"fmt"
	"strings"
)

// shape caps client c's two directions at p.Rate with kernel tbf on the
// router's TUNs (u<i> egress is the client's upload, d<i> egress its
// download), or removes the cap. The forwarder reads from the TUN, so a
// packet waits in the bottleneck's queue first, then gets the path's delay.
func (r *Rig) shape(c *Client, p Profile) error {
	prev := c.Profile()
	var lines []string
	for _, dev := range []string{fmt.Sprintf("u%d", c.index), fmt.Sprintf("d%d", c.index)} {
		switch {
		case p.Rate > 0:
			lines = append(lines, fmt.Sprintf("qdisc replace dev %s root tbf rate %dbit burst %d latency %dms",
				dev, p.Rate, tbfBurst(p.Rate), p.queue().Milliseconds()))
		case prev.Rate > 0:
			lines = append(lines, fmt.Sprintf("qdisc del dev %s root", dev))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return runCmd(strings.Join(lines, "\n")+"\n", "tc", "-n", r.Router.Name, "-batch", "-")
}

// tbfBurst is the bucket: 10 ms at the rate, and never less than two
// full-size packets (a smaller bucket would never pass a 1500-byte packet).
func tbfBurst(rate int64) int64 { return max(rate/8/100, 2*1514) }
