package netstack_test

// Caps on admitted sessions per source (docs/protocol.md §3.5 step 13, §3.7):
// a few addresses must not hold every slot. Real UDP over 127.0.0.0/8; each
// source address is a socket bound to it.

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// holdSlots dials n sessions from addr that stay admitted and only
// heartbeat (the client's service loop does that). It returns how many were
// admitted and the refusals of the others.
func holdSlots(t *testing.T, srv *netstack.Server, addr netip.Addr, n int) (admitted int, refusals []error) {
	t.Helper()
	for i := range n {
		if _, err := dialFrom(t, srv, addr, fmt.Sprintf("idle-%s-%d", addr, i)); err != nil {
			refusals = append(refusals, err)
			continue
		}
		admitted++
	}
	return admitted, refusals
}

// TestUDPFewAddressesCannotHoldEverySlot: 4 addresses open 8 sessions each
// on a 32-slot server in internet mode with every default (what a studio
// deploys) and keep them admitted with heartbeats alone; then 3 real players
// from other networks connect. Without caps the 32 idle sessions leave them
// ServerFull; the per-prefix cap (16 per /24) keeps 16 slots out of the
// attackers' reach.
func TestUDPFewAddressesCannotHoldEverySlot(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.Internet = true })
	held := 0
	var refusals []error
	for a := range 4 {
		n, errs := holdSlots(t, srv, netip.AddrFrom4([4]byte{127, 0, 0, byte(2 + a)}), 8)
		held += n
		refusals = append(refusals, errs...)
	}
	real := 0
	for i := range 3 {
		if _, err := dialFrom(t, srv, netip.AddrFrom4([4]byte{127, byte(71 + i), 0, 1}), fmt.Sprintf("real%d", i)); err != nil {
			t.Logf("real player %d: %v", i, err)
			continue
		}
		real++
	}
	t.Logf("idle sessions admitted %d of 32 from 4 addresses; real players admitted %d of 3", held, real)
	if real != 3 {
		t.Fatalf("%d of 3 real players admitted while %d idle sessions from 4 addresses held slots", real, held)
	}
	if held != netstack.DefaultAdmittedPerPrefix {
		t.Errorf("%d idle sessions admitted from one /24, want the default cap %d", held, netstack.DefaultAdmittedPerPrefix)
	}
	for _, err := range refusals {
		if !refusedAddressLimit(err) {
			t.Errorf("refused idle session: %v, want ConnectRejected AddressLimit", err)
		}
	}
	st := srv.Stats()
	if st.PrefixCapRefused != uint64(len(refusals)) || st.AddressCapRefused != 0 {
		t.Errorf("cap refusals: prefix %d address %d, want %d and 0", st.PrefixCapRefused, st.AddressCapRefused, len(refusals))
	}
}

// refusedAddressLimit reports whether err is a Dial refused AddressLimit.
func refusedAddressLimit(err error) bool {
	var he *netstack.HandshakeError
	return errors.As(err, &he) && he.Code == netstack.HandshakeRejected && he.Reason == wire.RejectAddressLimit
}

// TestUDPAdmissionCapJudgedAtAdmission: half-open handshakes hold no slot,
// so two handshakes of one address both pass the per-address cap of 1 at the
// hello; the second to finish is closed with Disconnect(AddressLimit). A
// third hello from that address is refused AddressLimit at once, another
// address of the same /24 is admitted (no prefix cap is set), and the
// address gets its slot back when its client leaves.
func TestUDPAdmissionCapJudgedAtAdmission(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.Admission = netstack.AdmissionCaps{PerAddress: 1} })
	first, second := newRawPeer4(t, srv.Addr(), nil), newRawPeer4(t, srv.Addr(), nil)
	first.connect(srv.Pin())
	second.connect(srv.Pin())
	if srv.HalfOpenCount() != 2 {
		t.Fatalf("%d half-open handshakes, want 2", srv.HalfOpenCount())
	}
	first.sendFinished("first", 1)
	first.await(gamemsg.TypeGameStateSync)
	second.sendFinished("second", 1)
	_, payload := second.await(wire.TypeDisconnect)
	if m, err := wire.ParseDisconnect(payload); err != nil || wire.DisconnectReason(m.Reason) != wire.DisconnectAddressLimit {
		t.Fatalf("Disconnect %+v (%v), want AddressLimit", m, err)
	}
	if _, err := dialFrom(t, srv, loopback, "third"); !refusedAddressLimit(err) {
		t.Fatalf("third Dial from the same address: %v, want AddressLimit", err)
	}
	if _, err := dialFrom(t, srv, netip.MustParseAddr("127.0.0.2"), "neighbour"); err != nil {
		t.Fatalf("another address of the /24: %v", err)
	}
	if st := srv.Stats(); st.AddressCapRefused != 2 || st.PrefixCapRefused != 0 {
		t.Fatalf("cap refusals: address %d prefix %d, want 2 and 0", st.AddressCapRefused, st.PrefixCapRefused)
	}
	first.sendUnreliable(wire.TypeDisconnect, wire.AppendDisconnect(nil, &wire.Disconnect{Reason: uint8(wire.DisconnectClientQuit)}))
	eventually(t, "the first client gone", func() bool { return len(srv.Clients()) == 1 })
	if _, err := dialFrom(t, srv, loopback, "fourth"); err != nil {
		t.Fatalf("after the first client left: %v", err)
	}
}

// TestUDPAdmissionPrefixCap: a per-prefix cap of 2 admits two addresses of
// a /24 and refuses a third, while another /24 is admitted.
func TestUDPAdmissionPrefixCap(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.Admission = netstack.AdmissionCaps{PerPrefix: 2} })
	for _, a := range []string{"127.0.0.1", "127.0.0.2"} {
		if _, err := dialFrom(t, srv, netip.MustParseAddr(a), a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dialFrom(t, srv, netip.MustParseAddr("127.0.0.3"), "third"); !refusedAddressLimit(err) {
		t.Fatalf("third address of the /24: %v, want AddressLimit", err)
	}
	if _, err := dialFrom(t, srv, netip.MustParseAddr("127.0.1.1"), "other"); err != nil {
		t.Fatalf("another /24: %v", err)
	}
	if st := srv.Stats(); st.PrefixCapRefused != 1 || st.AddressCapRefused != 0 {
		t.Fatalf("cap refusals: prefix %d address %d, want 1 and 0", st.PrefixCapRefused, st.AddressCapRefused)
	}
}

// TestUDPPrivateBindHasNoAdmissionCaps: on a private bind the caps are off
// by default: 20 clients from 127.0.0.1 (more than either internet default)
// are all admitted.
func TestUDPPrivateBindHasNoAdmissionCaps(t *testing.T) {
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.ConnectBudget = plentyBudget })
	for i := range 20 {
		if _, err := dialFrom(t, srv, loopback, fmt.Sprintf("local%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.Clients()); n != 20 {
		t.Fatalf("%d clients admitted, want 20", n)
	}
}
