package netrig

import (
	"fmt"
	"strings"
)

// The router's nftables table. The client-side leg of every packet (in on
// c<i>, and back in from d<i>) is notrack: conntrack must see a packet once,
// on the server-side leg, or the packet written back into a TUN would meet
// its own connection a second time. With NAT, the router also behaves as a
// home router does: nothing new comes in from the server side, and a packet
// for a mapping that no longer exists is dropped without an ICMP answer.
const rulesetHead = `table ip netrig {
	chain raw {
		type filter hook prerouting priority raw; policy accept;
		iifname "c*" notrack
		iifname "d*" notrack
	}
`

const rulesetNAT = `	chain input {
		type filter hook input priority filter; policy accept;
		iifname "s0" meta l4proto { tcp, udp } drop
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname "s0" ct state new drop
	}
`

// firewall loads the router's table.
func (r *Rig) firewall() error {
	var b strings.Builder
	b.WriteString(rulesetHead)
	if r.cfg.NAT {
		b.WriteString(rulesetNAT)
		b.WriteString("\tchain post {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n")
		for i := range r.clients {
			fmt.Fprintf(&b, "\t\toifname \"s0\" ip saddr %s jump c%d\n", clientSubnet(i), i)
		}
		b.WriteString("\t}\n")
		for i := range r.clients {
			fmt.Fprintf(&b, "\tchain c%d {\n%s\t}\n", i, masquerade(0, "\t\t"))
		}
	}
	b.WriteString("}\n")
	if err := r.Router.run(b.String(), "nft", "-f", "-"); err != nil {
		return err
	}
	if r.cfg.NAT {
		r.nat = &natTable{router: r.Router, gen: make([]int, len(r.clients))}
	}
	return nil
}

// masquerade is a client chain's rules for mapping generation gen: ports
// from a range of 1000 that the next generation does not share, so that a
// rebinding always changes the port the server sees.
func masquerade(gen int, indent string) string {
	lo := 10000 + (gen%50)*1000
	return fmt.Sprintf("%smeta l4proto { tcp, udp } masquerade to :%d-%d\n%smasquerade\n", indent, lo, lo+999, indent)
}

// natTable is the router's NAT state: each client's mapping generation.
type natTable struct {
	router *Node
	gen    []int
}

// rebind moves client i's mapping to the next generation's port range and
// deletes its conntrack entries (in one nft transaction, then conntrack).
func (t *natTable) rebind(i int) error {
	t.gen[i]++
	script := fmt.Sprintf("flush chain ip netrig c%d\n", i) +
		masquerade(t.gen[i], fmt.Sprintf("add rule ip netrig c%d ", i))
	if err := t.router.run(script, "nft", "-f", "-"); err != nil {
		return err
	}
	err := t.router.run("", "conntrack", "-D", "-s", clientAddr(i).String())
	if err != nil && strings.Contains(err.Error(), " 0 flow entries have been deleted") {
		// conntrack exits 1 when nothing matched: the client sent nothing yet.
		return nil
	}
	return err
}
