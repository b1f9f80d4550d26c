// Package throttle limits failed logins and other events per key. Time is
// always passed in by the caller, so the game thread's clock (or a test's)
// drives it, and memory is bounded: each type tracks at most MaxKeys keys.
//
//   - Backoff: a key's failures beyond Free make it wait Base, 2·Base, …
//     up to Max before its next attempt; never a hard lock.
//   - Window: at most Max events per key in any span of Per.
//   - Rate: a token bucket of Burst events per Per (registrations per
//     address).
//   - Recent: keys remembered for a while after they were marked.
//
// The package never decides what a key is; LoginGate combines a Backoff
// per (account, address), a Backoff per address, a Window per account
// shared by the addresses without a recent login of it, and a Recent of
// those logins, which is what the mmo module needs. Its answers say only
// "wait d", the same for a name that exists and one that does not.
package throttle

// DefaultMaxKeys bounds the keys a Backoff or a Rate tracks by default.
const DefaultMaxKeys = 10_000
