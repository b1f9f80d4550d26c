package config

import (
	"net"
	"net/netip"
	"strconv"
	"time"
)

// OpsSection is [ops]: the operator's HTTP listener (Prometheus metrics,
// /healthz, /readyz and the status page).
type OpsSection struct {
	// Listen is the listener's "host:port"; "" (the default) means no
	// listener. The host is an IP address or "localhost"; port 0 means any
	// free port.
	Listen string `toml:"listen"`
	// StallSeconds is how long the tick loop may go without finishing a
	// tick before /healthz answers 503; 0.1..600.
	StallSeconds float64 `toml:"stall_seconds"`
	// HistorySeconds is how many per-second samples the status page's
	// plots keep; 10..86400.
	HistorySeconds int `toml:"history_seconds"`
}

// AgonesSection is [agones]: running as an Agones GameServer.
type AgonesSection struct {
	// Enabled speaks to the Agones SDK sidecar's local HTTP API.
	Enabled bool `toml:"enabled"`
	// SDKPort is the sidecar's HTTP port; 0 means $AGONES_SDK_HTTP_PORT,
	// else 9358. 0..65535.
	SDKPort int `toml:"sdk_port"`
	// HealthSeconds is the period, in seconds, of the health pings the tick
	// loop sends; below the GameServer's health.periodSeconds. 0.1..300.
	HealthSeconds float64 `toml:"health_seconds"`
	// ShutdownOnMatchEnd asks Agones to shut the GameServer down when a
	// match ends (match-based modes: one match per GameServer).
	ShutdownOnMatchEnd bool `toml:"shutdown_on_match_end"`
	// DrainSeconds bounds the drain a SIGTERM starts under Agones (running
	// matches end, the mmo hands its characters over, then the server
	// exits); below the pod's terminationGracePeriodSeconds. 1..3600.
	DrainSeconds float64 `toml:"drain_seconds"`
}

func defaultOps() OpsSection {
	return OpsSection{Listen: "", StallSeconds: 5, HistorySeconds: 600}
}

func defaultAgones() AgonesSection {
	return AgonesSection{Enabled: false, SDKPort: 0, HealthSeconds: 2, ShutdownOnMatchEnd: false, DrainSeconds: 25}
}

// OpsStall is ops.stall_seconds as a time.Duration.
func (c *Config) OpsStall() time.Duration { return seconds(c.Ops.StallSeconds) }

// AgonesDrain is agones.drain_seconds as a time.Duration.
func (c *Config) AgonesDrain() time.Duration { return seconds(c.Agones.DrainSeconds) }

// AgonesHealthInterval is agones.health_seconds as a time.Duration.
func (c *Config) AgonesHealthInterval() time.Duration { return seconds(c.Agones.HealthSeconds) }

func (c *Config) checkOps() *Error {
	o := &c.Ops
	if o.Listen != "" {
		host, port, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return c.refuse("ops.listen", o.Listen, `must be "host:port", such as "127.0.0.1:9150"`)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return c.refuse("ops.listen", o.Listen, "the port must be 0..65535")
		}
		loopback := host == "localhost"
		if !loopback {
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return c.refuse("ops.listen", o.Listen, `the host must be an IP address or "localhost"`)
			}
			loopback = ip.IsLoopback()
		}
		if !loopback && !c.Internet() {
			return c.refuseVs("ops.listen", o.Listen, "network.exposure",
				`is not a loopback address: metrics and the status page (player names, pings) would be reachable from the network; that takes the consent of network.exposure = "internet" (or --internet); firewall the port`)
		}
	}
	if e := c.floatIn("ops.stall_seconds", o.StallSeconds, 0.1, 600, " seconds"); e != nil {
		return e
	}
	return c.intIn("ops.history_seconds", o.HistorySeconds, 10, 86400, " seconds")
}

func (c *Config) checkAgones() *Error {
	a := &c.Agones
	if e := c.intIn("agones.sdk_port", a.SDKPort, 0, 65535, ""); e != nil {
		return e
	}
	if e := c.floatIn("agones.drain_seconds", a.DrainSeconds, 1, 3600, " seconds"); e != nil {
		return e
	}
	return c.floatIn("agones.health_seconds", a.HealthSeconds, 0.1, 300, " seconds")
}
