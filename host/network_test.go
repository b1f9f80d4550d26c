package host_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestStatusShowsHandshakeCounters: the admin status answers what an operator
// needs during an attack: exposure, half-open handshakes, cookies, signatures,
// refusals by kind, drops and plain traffic.
func TestStatusShowsHandshakeCounters(t *testing.T) {
	srv, _ := startHost(t, nil)
	dialHost(t, srv, "alice")
	dialHost(t, srv, "bob")
	eventually(t, "two players", func() bool { return srv.Stats().Players == 2 })
	out, err := srv.Exec("status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"exposed to loopback peers only (127.0.0.0/8); protocol v4 with address validation, v3 accepted",
		"handshakes: half-open 0 (evicted 0), cookies sent 2 verified 2 failed 0, signatures 2",
		"refused: address budget 0, prefix budget 0, signature budget 0, unvalidated-reply budget 0",
		"dropped ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	st := srv.Stats().Net
	if st.PlainBytesReceived < 4*1200 || st.PlainBytesSent == 0 {
		t.Errorf("plain bytes in %d out %d", st.PlainBytesReceived, st.PlainBytesSent)
	}
}

// TestInternetModeHost: network.exposure = "internet" on the dual-stack
// wildcard admits a v4 client over 127.0.0.1 and says what it exposes.
func TestInternetModeHost(t *testing.T) {
	srv, _ := startHost(t, func(c *config.Config) {
		c.Network.Exposure, c.Network.BindAddress, c.Network.AllowV3 = config.ExposureInternet, "::", false
	})
	if got := srv.Exposure(); !strings.Contains(got, "every IPv4 and IPv6 address") || !strings.Contains(got, "v3 refused") {
		t.Fatalf("Exposure() = %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), srv.Addr().Port()), Name: "net", Pin: srv.Pin()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Protocol() != 4 {
		t.Fatalf("protocol %d", c.Protocol())
	}
}

// TestInternetModeAdmissionCaps: in internet mode the admission caps of
// [network] apply (here 2 per address): a third client from 127.0.0.1 is
// refused AddressLimit, and status and /metrics say so.
func TestInternetModeAdmissionCaps(t *testing.T) {
	srv, _ := startHost(t, func(c *config.Config) {
		c.Network.Exposure, c.Network.AllowV3 = config.ExposureInternet, false
		c.Network.AdmittedPerAddress = 2
		withOps(c)
	})
	dialHost(t, srv, "one")
	dialHost(t, srv, "two")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "three", Pin: srv.Pin()})
	var he *netstack.HandshakeError
	if !asHandshake(err, &he) || he.Reason != wire.RejectAddressLimit {
		t.Fatalf("third client from one address: %v, want ConnectRejected AddressLimit", err)
	}
	out, err := srv.Exec("status")
	if err != nil {
		t.Fatal(err)
	}
	if want := "admission caps: 2 per address, 16 per /24 or /64; clients refused 1 by address, 0 by prefix"; !strings.Contains(out, want) {
		t.Errorf("status lacks %q:\n%s", want, out)
	}
	fams := scrape(t, srv)
	if v := value(t, fams, "sparkhost_net_admission_cap_refusals_total", "cap=address"); v != 1 {
		t.Errorf("admission_cap_refusals_total{cap=address} = %v, want 1", v)
	}
	if v := value(t, fams, "sparkhost_net_handshake_refusals_total", "reason=address_limit"); v != 1 {
		t.Errorf("handshake_refusals_total{reason=address_limit} = %v, want 1", v)
	}
}

// TestPrivateBindAdmissionCaps: on a private bind the caps are off unless
// network.admitted_caps_private says otherwise.
func TestPrivateBindAdmissionCaps(t *testing.T) {
	for _, tc := range []struct {
		private bool
		want    string
	}{{false, "admission caps: no cap per address, no cap per /24 or /64"}, {true, "admission caps: 8 per address, 16 per /24 or /64"}} {
		srv, _ := startHost(t, func(c *config.Config) { c.Network.AdmittedCapsPrivate = tc.private })
		if out, err := srv.Exec("status"); err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("admitted_caps_private = %v: status lacks %q:\n%s (%v)", tc.private, tc.want, out, err)
		}
	}
}
