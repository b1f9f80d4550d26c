package throttle

import "time"

// LoginGate throttles logins so that strangers cannot lock an owner out:
//
//   - Pairs: failures are counted per (account, address). After Free
//     failures each further one makes that pair wait Base, 2·Base, … up to
//     Max before its next attempt. Guesses from one address never delay the
//     same account's login from another address.
//   - Addresses: failures of one address across every account it tries,
//     with the same growing delays from a higher Free, so one address
//     spraying guesses at many names is slowed too.
//   - Accounts: a much looser ceiling per account over every address (a
//     Limiter: many failures within a window lock the account for a while),
//     which only a distributed attack reaches.
//
// A success clears the pair and the account, never the address (an
// attacker could otherwise reset its address's count by logging into an
// account of its own between guesses).
//
// Keys are used as given: the caller folds account names to their canonical
// form and passes the address without its port (one host, many ports).
type LoginGate struct {
	Pairs     *Backoff
	Addresses *Backoff
	Accounts  *Limiter
}

// GateConfig configures a LoginGate.
type GateConfig struct {
	Pairs     BackoffConfig
	Addresses BackoffConfig
	Accounts  Config
}

// NewLoginGate returns a gate.
func NewLoginGate(c GateConfig) *LoginGate {
	return &LoginGate{Pairs: NewBackoff(c.Pairs), Addresses: NewBackoff(c.Addresses), Accounts: New(c.Accounts)}
}

func pairKey(account, addr string) string { return account + "\x00" + addr }

// Check reports whether a login of account from addr may proceed now; when
// it may not, retryAfter is the longest of the waits that apply.
func (g *LoginGate) Check(account, addr string, now time.Time) (retryAfter time.Duration, ok bool) {
	rp, okP := g.Pairs.Check(pairKey(account, addr), now)
	ra, okA := g.Addresses.Check(addr, now)
	rc, okC := g.Accounts.Check(account, now)
	return max(rp, ra, rc), okP && okA && okC
}

// Failure records a failed login of account from addr and returns the
// longest wait it imposes before that pair's next attempt.
func (g *LoginGate) Failure(account, addr string, now time.Time) time.Duration {
	dp := g.Pairs.Failure(pairKey(account, addr), now)
	da := g.Addresses.Failure(addr, now)
	dc, _ := g.Accounts.Failure(account, now)
	return max(dp, da, dc)
}

// Success records a successful login of account from addr.
func (g *LoginGate) Success(account, addr string) {
	g.Pairs.Success(pairKey(account, addr))
	g.Accounts.Success(account)
}
