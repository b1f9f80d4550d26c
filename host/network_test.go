package host_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/netstack"
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
