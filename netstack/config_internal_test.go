package netstack

import (
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/cookie"
	"github.com/sparkhost/sparkhost/netstack/memlink"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestServerConfigPopulate: the zero ServerConfig becomes the documented
// defaults in one step, and "none" (a negative linger or hold) survives it
// to become 0 in the sessions' share.
func TestServerConfigPopulate(t *testing.T) {
	var c ServerConfig
	c.populate()
	for name, ok := range map[string]bool{
		"MaxProtocol 4":           c.MaxProtocol == MaxProtocol,
		"MaxClients 32":           c.MaxClients == DefaultMaxClients,
		"SecuringTimeout 5s":      c.SecuringTimeout == 5*time.Second,
		"Registry":                c.Registry != nil,
		"Logger":                  c.Logger != nil,
		"SocketBuffer 4 MiB":      c.SocketBuffer == 4<<20,
		"DatagramSize 1200":       c.DatagramSize == wire.DefaultDatagramSize,
		"ReceiveBatch 32":         c.ReceiveBatch == 32,
		"Timeout 10s":             c.Timeout == 10*time.Second,
		"HeartbeatInterval 1s":    c.HeartbeatInterval == time.Second,
		"FlushDelay 10ms":         c.FlushDelay == 10*time.Millisecond,
		"CookieRotation 30s":      c.CookieRotation == cookie.DefaultRotation,
		"HoldNotLoaded 10s":       c.HoldNotLoaded == DefaultHoldNotLoaded,
		"CloseLinger 1s":          c.CloseLinger == DefaultCloseLinger,
		"RefuseV3Detail":          c.RefuseV3Detail != "",
		"HalfOpen.Max 1024":       c.HalfOpen.Max == DefaultHalfOpenMax,
		"HandshakeBudget 1000/s":  c.HandshakeBudget.RefillPerSecond == DefaultHandshakesPerSecond,
		"PrefixBudget burst 64":   c.PrefixBudget.Burst == DefaultPrefixBurst,
		"no admission caps (LAN)": c.Admission == AdmissionCaps{PerAddress: -1, PerPrefix: -1},
	} {
		if !ok {
			t.Errorf("populate: %s not applied", name)
		}
	}
	if err := c.validate(); err != nil {
		t.Fatalf("the populated zero config does not validate: %v", err)
	}
	cc := c.channelConfig(transport.MaxUDPDatagram)
	if cc.datagramSize != 1200 || cc.holdFor != DefaultHoldNotLoaded || cc.closeLinger != DefaultCloseLinger || cc.reliable.ConnectionTimeout != c.Timeout {
		t.Fatalf("channel config %+v", cc)
	}

	none := ServerConfig{CloseLinger: -1, HoldNotLoaded: -1, DatagramSize: 9000}
	none.populate()
	if none.CloseLinger != -1 || none.HoldNotLoaded != -1 {
		t.Fatalf("populate replaced a negative (none): linger %v, hold %v", none.CloseLinger, none.HoldNotLoaded)
	}
	if cc := none.channelConfig(1100); cc.closeLinger != 0 || cc.holdFor != 0 || cc.datagramSize != 1100 {
		t.Fatalf("channel config over a 1100-byte transport: linger %v, hold %v, datagram %d", cc.closeLinger, cc.holdFor, cc.datagramSize)
	}
}

// TestServerConfigValidate: each invalid config is refused with the field
// named.
func TestServerConfigValidate(t *testing.T) {
	mc, _ := memlink.NewNetwork(memlink.Config{}).Attach(memlink.Addr(1, 1))
	for _, tc := range []struct {
		name, want string
		mod        func(*ServerConfig)
	}{
		{"protocol 5", "MaxProtocol 5", func(c *ServerConfig) { c.MaxProtocol = 5 }},
		{"internet v3", "internet mode requires protocol v4", func(c *ServerConfig) { c.Internet, c.MaxProtocol = true, 3 }},
		{"internet unvalidated", "SkipAddressValidation", func(c *ServerConfig) { c.Internet, c.SkipAddressValidation = true, true }},
		{"long v3 detail", "RefuseV3Detail", func(c *ServerConfig) { c.RefuseV3Detail = strings.Repeat("x", 51) }},
		{"datagram size", "datagram size 1000", func(c *ServerConfig) { c.DatagramSize = 1000 }},
		{"two transports", "both Transport and Conn", func(c *ServerConfig) { c.Conn, c.Transport = mc, transport.FromPacketConn(mc) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c ServerConfig
			tc.mod(&c)
			c.populate()
			if err := c.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// TestClientConfigPopulateValidate: the zero ClientConfig (with a pin)
// becomes the documented defaults; invalid ones are refused.
func TestClientConfigPopulateValidate(t *testing.T) {
	pin := "ed25519:" + strings.Repeat("A", 43)
	c := ClientConfig{Pin: pin}
	c.populate()
	if c.ConnectRetry != DefaultConnectRetry || c.ConnectRetries != DefaultConnectRetries || c.InboxSize != DefaultInboxSize ||
		c.Registry == nil || c.DatagramSize != 1200 || c.FlushInterval != DefaultClientFlushInterval ||
		c.Timeout != DefaultTimeout || c.HeartbeatInterval != DefaultHeartbeatInterval || c.CloseLinger != DefaultCloseLinger {
		t.Fatalf("populate: %+v", c)
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if cc := c.channelConfig(4, transport.MaxUDPDatagram); cc.holdFor != DefaultHoldUnannounced || cc.flushDelay != DefaultFlushDelay {
		t.Fatalf("v4 channel config: hold %v, flush delay %v", cc.holdFor, cc.flushDelay)
	}
	if cc := c.channelConfig(3, transport.MaxUDPDatagram); cc.holdFor != 0 {
		t.Fatalf("v3 channel config holds %v", cc.holdFor)
	}
	for _, tc := range []struct {
		name, want string
		cfg        ClientConfig
	}{
		{"protocol 5", "protocol 5", ClientConfig{Pin: pin, Protocol: 5}},
		{"no trust", "no pin and no known_hosts", ClientConfig{}},
		{"bad pin", "", ClientConfig{Pin: "ed25519:short"}},
		{"datagram size", "datagram size 70000", ClientConfig{Pin: pin, DatagramSize: 70000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.populate()
			if err := c.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
