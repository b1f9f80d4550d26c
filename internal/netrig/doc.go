// Package netrig is a real-network test rig: Linux network namespaces that a
// test makes for itself (a server, a router and clients, joined by veth
// pairs), addresses from the benchmarking range 198.18.0.0/15 inside those
// namespaces only, an nftables masquerade on the router whose mapping can be
// changed mid-session, and a userspace impairment stage on the router's path
// (TUN devices and a seeded forwarder that delays, drops, duplicates and
// reorders IP packets; kernel tbf caps the rate) while the end points keep
// real kernel UDP sockets.
//
// Topology (client i, 0 ≤ i < 200):
//
//	server ns            router ns                               client ns i
//	198.18.0.2 eth0 ── s0 198.18.0.1   c<i> 198.19.i.1 ── eth0 198.19.i.2
//	                      └─ u<i>: TUN, client→server (tbf, then the forwarder)
//	                      └─ d<i>: TUN, server→client (tbf, then the forwarder)
//
// A packet from client i enters the router on c<i>, is routed into u<i> by a
// policy rule, read by the forwarder, held by the profile, and written back
// into u<i>, from where the main table routes it out of s0 (masqueraded to
// 198.18.0.1 when NAT is on). Replies take d<i> the same way. Conntrack sees
// only the server-side leg (the client-side leg is notrack), so the NAT
// binding is made once, when the impaired packet leaves on s0.
//
// The package owns those namespaces and nothing else: it never touches the
// host's own interfaces, routes or firewall, sends nothing outside the
// namespaces it made, removes them on Close (and sweeps, on start, those a
// dead process left behind), and imports nothing of the project.
package netrig
