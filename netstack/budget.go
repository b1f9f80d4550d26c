package netstack

import (
	"encoding/binary"
	"hash/maphash"
	"net/netip"
	"time"

	"github.com/sparkhost/sparkhost/netstack/ratelimit"
)

// Defaults of the handshake budgets (docs/protocol.md §3.6). The per-address
// budget keeps its v3 defaults (ratelimit.DefaultBurst, DefaultRefillPerSecond).
const (
	DefaultPrefixBurst           = 64
	DefaultPrefixRefillPerSecond = 16.0
	// DefaultHandshakesPerSecond is the global budget of handshake
	// signatures (X25519 + Ed25519), across all sources; its burst is one
	// second's worth.
	DefaultHandshakesPerSecond = 1000
	// DefaultUnvalidatedRepliesPerSecond is the global budget of datagrams
	// sent to sources that have not proven their address (cookie replies,
	// refusals, v3 and v1 answers); its burst is one second's worth.
	DefaultUnvalidatedRepliesPerSecond = 2000
	// DefaultUnvalidatedRefusalsPerSecond is the global budget of
	// ConnectRejected answers to sources that have not proven their address,
	// charged before the reply budget: a tenth of it, so that a flood of
	// tiny requests leaves CookieReplies nine tenths (docs/protocol.md §3.5).
	DefaultUnvalidatedRefusalsPerSecond = 200
)

// budgets are the handshake budgets of one server. Every plain and legacy
// datagram is charged to its address, then to its prefix (a datagram the
// address budget refused costs its prefix nothing); signatures and replies to
// unvalidated sources are charged to the global buckets when they happen.
type budgets struct {
	address     *ratelimit.Limiter // per IPv4 address or IPv6 address
	prefix      *ratelimit.Limiter // per IPv4 /24 or IPv6 /64
	signatures  *ratelimit.Bucket
	unvalidated *ratelimit.Bucket
	refusals    *ratelimit.Bucket // refusals to unvalidated sources, before unvalidated
	seed        maphash.Seed      // hashes IPv6 keys into 63 bits
}

// populateBudgets fills the zero budgets and admission caps of cfg with the
// defaults.
func populateBudgets(cfg *ServerConfig) {
	if cfg.PrefixBudget.Burst == 0 {
		cfg.PrefixBudget.Burst = DefaultPrefixBurst
	}
	if cfg.PrefixBudget.RefillPerSecond == 0 {
		cfg.PrefixBudget.RefillPerSecond = DefaultPrefixRefillPerSecond
	}
	fill := func(b *ratelimit.BucketConfig, rate int) {
		if b.RefillPerSecond == 0 {
			b.RefillPerSecond = float64(rate)
		}
		if b.Burst == 0 {
			b.Burst = max(int(b.RefillPerSecond), 1)
		}
	}
	fill(&cfg.HandshakeBudget, DefaultHandshakesPerSecond)
	fill(&cfg.UnvalidatedReplyBudget, DefaultUnvalidatedRepliesPerSecond)
	fill(&cfg.UnvalidatedRefusalBudget, DefaultUnvalidatedRefusalsPerSecond)
	cfg.Admission.populate(cfg.Internet)
}

// newBudgets builds the budgets of a populated, validated cfg.
func newBudgets(cfg *ServerConfig) *budgets {
	return &budgets{
		address:     ratelimit.New(cfg.ConnectBudget),
		prefix:      ratelimit.New(cfg.PrefixBudget),
		signatures:  ratelimit.NewBucket(cfg.HandshakeBudget),
		unvalidated: ratelimit.NewBucket(cfg.UnvalidatedReplyBudget),
		refusals:    ratelimit.NewBucket(cfg.UnvalidatedRefusalBudget),
		seed:        maphash.MakeSeed(),
	}
}

// addressKey is the budget key of an address: an IPv4 address as its 32-bit
// value (the v3 key), an IPv6 address as a keyed 63-bit hash with the top bit
// set, so the two kinds never meet.
func (b *budgets) addressKey(a netip.Addr) uint64 {
	if a.Is4() {
		v := a.As4()
		return uint64(binary.BigEndian.Uint32(v[:]))
	}
	return 1<<63 | maphash.Comparable(b.seed, a.As16())>>1
}

// prefixKey is the budget key of a's /24 (IPv4) or /64 (IPv6).
func (b *budgets) prefixKey(a netip.Addr) uint64 {
	if a.Is4() {
		v := a.As4()
		return uint64(binary.BigEndian.Uint32(v[:]) >> 8)
	}
	v := a.As16()
	return 1<<63 | maphash.Comparable(b.seed, [8]byte(v[:8]))>>1
}

// chargeDatagram charges one plain or legacy datagram from a to the address
// and prefix budgets and returns the kind of refusal, or dropOther for none.
func (b *budgets) chargeDatagram(a netip.Addr, now time.Time) (refused dropKind, ok bool) {
	if !b.address.AllowKey(b.addressKey(a), now) {
		return dropRateLimited, false
	}
	if !b.prefix.AllowKey(b.prefixKey(a), now) {
		return dropPrefixLimited, false
	}
	return dropOther, true
}
