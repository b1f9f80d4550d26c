package host

import (
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
)

// withHandshakeRules adds the [network] keys of the handshake (exposure,
// protocol versions, budgets, half-open caps: docs/protocol.md §3.6) to nc.
func withHandshakeRules(cfg *config.Config, nc netstack.ServerConfig) netstack.ServerConfig {
	n := &cfg.Network
	nc.Internet = cfg.Internet()
	nc.RefuseV3 = !n.AllowV3 || cfg.Internet() // internet mode is v4 only, whatever the default says
	if cfg.Rooms.Enabled {
		// A v3 client cannot send the room requests that are the only way
		// out of the lobby: it is refused with a reason rather than
		// admitted to nothing (docs/protocol.md §3.2).
		nc.RefuseV3, nc.RefuseV3Detail = true, roomsNeedV4
	}
	nc.SkipAddressValidation = !n.AddressValidation && !cfg.Internet()
	nc.PrefixBudget = ratelimit.Config{Burst: n.PrefixBurst, RefillPerSecond: n.PrefixRefillPerSecond}
	nc.HandshakeBudget = globalBudget(n.HandshakesPerSecond)
	nc.UnvalidatedReplyBudget = globalBudget(n.UnvalidatedRepliesPerSecond)
	nc.UnvalidatedRefusalBudget = globalBudget(n.RefusalsPerSecond)
	nc.Admission = admissionCaps(cfg)
	nc.HalfOpen = netstack.HalfOpenConfig{Max: n.HalfOpenMax, PerAddress: n.HalfOpenPerAddress, PerPrefix: n.HalfOpenPerPrefix}
	nc.SecuringTimeout = cfg.HalfOpenTimeoutDuration()
	nc.DatagramSize = n.DatagramSize
	return nc
}

// roomsNeedV4 is the ProtocolTooOld detail a lobby of rooms answers v3
// clients with.
const roomsNeedV4 = "rooms need protocol v4; update the client"

// admissionCaps are the caps network.admitted_* set: in internet mode, and
// on a private bind only with admitted_caps_private; 0 in the file is no cap
// (negative in netstack, whose 0 means its default).
func admissionCaps(cfg *config.Config) netstack.AdmissionCaps {
	n := &cfg.Network
	if !cfg.Internet() && !n.AdmittedCapsPrivate {
		return netstack.AdmissionCaps{PerAddress: -1, PerPrefix: -1}
	}
	orNone := func(v int) int {
		if v == 0 {
			return -1
		}
		return v
	}
	return netstack.AdmissionCaps{PerAddress: orNone(n.AdmittedPerAddress), PerPrefix: orNone(n.AdmittedPerPrefix)}
}

// globalBudget is a global bucket of rate tokens a second whose burst is one
// second's worth.
func globalBudget(rate float64) ratelimit.BucketConfig {
	return ratelimit.BucketConfig{Burst: max(int(rate), 1), RefillPerSecond: rate}
}
