package netrig

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Addresses inside the rig (198.18.0.0/15, RFC 2544's benchmarking range,
// which nothing outside the rig's namespaces routes).
var (
	routerServerSide = netip.MustParseAddr("198.18.0.1")
	serverAddr       = netip.MustParseAddr("198.18.0.2")
)

func clientSubnet(i int) string      { return fmt.Sprintf("198.19.%d.0/24", i) }
func clientGateway(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 19, byte(i), 1}) }
func clientAddr(i int) netip.Addr    { return netip.AddrFrom4([4]byte{198, 19, byte(i), 2}) }
func upTable(i int) int              { return 1000 + i }
func downTable(i int) int            { return 2000 + i }
func seedFor(seed uint64, i, dir int) uint64 {
	return splitmix(seed ^ splitmix(uint64(i)<<1|uint64(dir)))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// namespaces are the names of the rig's namespaces that exist.
func (r *Rig) namespaces() []string {
	var ns []string
	for _, n := range []*Node{r.Server, r.Router} {
		if n != nil {
			ns = append(ns, n.Name)
		}
	}
	for _, c := range r.clients {
		ns = append(ns, c.Name)
	}
	return ns
}

// build makes the namespaces, then the links, addresses and routes, then the
// router's TUNs, forwarders, rules and firewall. Every step it finished is
// undone by Close.
func (r *Rig) build() error {
	own, err := owner()
	if err != nil {
		return err
	}
	base := fmt.Sprintf("%s%s-%d-", nsPrefix, own, rigSeq.Add(1))
	if r.Server, err = r.addNode(base+"server", serverAddr); err != nil {
		return err
	}
	if r.Router, err = r.addNode(base+"router", routerServerSide); err != nil {
		return err
	}
	for i := range r.cfg.Clients {
		n, err := r.addNode(fmt.Sprintf("%sc%d", base, i), clientAddr(i))
		if err != nil {
			return err
		}
		c := &Client{Node: *n, index: i}
		p := r.cfg.Profile
		c.profile.Store(&p)
		r.clients = append(r.clients, c)
	}
	steps := []func() error{r.sysctls, r.links, r.ends, r.forwarders, r.firewall}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	for _, c := range r.clients {
		if err := r.shape(c, r.cfg.Profile); err != nil {
			return err
		}
	}
	return nil
}

// addNode makes a namespace; Close removes it (it is in namespaces() from
// the moment it exists).
func (r *Rig) addNode(name string, addr netip.Addr) (*Node, error) {
	if err := addNamespace(name); err != nil {
		return nil, err
	}
	return &Node{Name: name, Addr: addr, rig: r}, nil
}

// sysctls: the router forwards and does not check reverse paths (a packet
// written back into a TUN comes in on the TUN, not on the link its source
// lives behind); nobody speaks IPv6, so that nothing but the test's traffic
// crosses the links.
func (r *Rig) sysctls() error {
	set := func(n *Node, kv map[string]string) error {
		return n.Do(func() error {
			for k, v := range kv {
				if err := os.WriteFile(filepath.Join("/proc/sys/net", k), []byte(v), 0); err != nil {
					return fmt.Errorf("netrig: sysctl net/%s in %s: %w", k, n.Name, err)
				}
			}
			return nil
		})
	}
	noV6 := map[string]string{"ipv6/conf/all/disable_ipv6": "1", "ipv6/conf/default/disable_ipv6": "1"}
	for _, n := range r.nodes() {
		if err := set(n, noV6); err != nil {
			return err
		}
	}
	return set(r.Router, map[string]string{
		"ipv4/ip_forward":                  "1",
		"ipv4/conf/all/rp_filter":          "0",
		"ipv4/conf/default/rp_filter":      "0",
		"ipv4/conf/default/send_redirects": "0",
		"ipv4/conf/all/send_redirects":     "0",
	})
}

func (r *Rig) nodes() []*Node {
	ns := []*Node{r.Server, r.Router}
	for _, c := range r.clients {
		ns = append(ns, &c.Node)
	}
	return ns
}

// links makes the veth pairs from the router's side and addresses them.
func (r *Rig) links() error {
	lines := []string{
		"link set lo up",
		"link add name s0 type veth peer name eth0 netns " + r.Server.Name,
		"addr add " + routerServerSide.String() + "/24 dev s0",
		"link set s0 up",
	}
	for i, c := range r.clients {
		lines = append(lines,
			fmt.Sprintf("link add name c%d type veth peer name eth0 netns %s", i, c.Name),
			fmt.Sprintf("addr add %s/24 dev c%d", clientGateway(i), i),
			fmt.Sprintf("link set c%d up", i))
	}
	return r.Router.batch(lines...)
}

// ends addresses the server and the clients and points them at the router.
func (r *Rig) ends() error {
	if err := r.Server.batch("link set lo up", "addr add "+serverAddr.String()+"/24 dev eth0",
		"link set eth0 up", "route add default via "+routerServerSide.String()); err != nil {
		return err
	}
	for i, c := range r.clients {
		if err := c.batch("link set lo up", fmt.Sprintf("addr add %s/24 dev eth0", clientAddr(i)),
			"link set eth0 up", "route add default via "+clientGateway(i).String()); err != nil {
			return err
		}
	}
	return nil
}

// forwarders opens each client's two TUNs in the router, starts their
// forwarders and routes the client's traffic through them: what comes in on
// c<i> goes to u<i>; what comes in on s0 for the client's subnet goes to
// d<i>. A packet written back into a TUN is routed by the main table.
func (r *Rig) forwarders() error {
	var lines []string
	for i, c := range r.clients {
		var err error
		if c.up, err = r.forwarder(fmt.Sprintf("u%d", i), seedFor(r.cfg.Seed, i, 0)); err != nil {
			return err
		}
		if c.down, err = r.forwarder(fmt.Sprintf("d%d", i), seedFor(r.cfg.Seed, i, 1)); err != nil {
			return err
		}
		lines = append(lines,
			fmt.Sprintf("link set u%d txqueuelen 1000 up", i),
			fmt.Sprintf("link set d%d txqueuelen 1000 up", i),
			fmt.Sprintf("route add default dev u%d table %d", i, upTable(i)),
			fmt.Sprintf("route add %s dev d%d table %d", clientSubnet(i), i, downTable(i)),
			fmt.Sprintf("rule add pref 100 iif c%d lookup %d", i, upTable(i)),
			fmt.Sprintf("rule add pref 100 iif s0 to %s lookup %d", clientSubnet(i), downTable(i)))
	}
	return r.Router.batch(lines...)
}

// forwarder opens a TUN in the router and starts its forwarder.
func (r *Rig) forwarder(tun string, seed uint64) (*pipe, error) {
	fd, err := r.Router.openTUN(tun)
	if err != nil {
		return nil, err
	}
	p, err := newPipe(fd, r.cfg.Profile.oneWay(), seed)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	r.track(p.close)
	return p, nil
}
