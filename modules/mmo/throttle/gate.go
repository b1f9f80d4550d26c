package throttle

import "time"

// LoginGate throttles logins so that guessing is slow and strangers cannot
// lock an owner out:
//
//   - Pairs: failures are counted per (account, address). After Free
//     failures each further one makes that pair wait Base, 2·Base, … up to
//     Max before its next attempt. Guesses from one address never delay the
//     same account's login from another address.
//   - Addresses: failures of one address across every account it tries,
//     with the same growing delays from a higher Free, so one address
//     spraying guesses at many names is slowed too.
//   - Accounts: the addresses that have not logged into an account
//     recently (Trusted) share one budget of attempts at it, at most Max
//     in any Per, however many they are. An attempt is taken from it when
//     it starts, so attempts in flight at once count. An address with a
//     recent successful login of the account does not use it: it keeps its
//     own allowance (its pair's delays) whatever strangers do.
//
// A success clears the pair and trusts it; it never clears the address (an
// attacker could otherwise reset its address's count by logging into an
// account of its own between guesses).
//
// Keys are used as given: the caller folds account names to their canonical
// form and passes the address without its port (one host, many ports).
type LoginGate struct {
	Pairs     *Backoff
	Addresses *Backoff
	Accounts  *Window
	Trusted   *Recent
}

// GateConfig configures a LoginGate.
type GateConfig struct {
	Pairs     BackoffConfig
	Addresses BackoffConfig
	Accounts  WindowConfig
	Trusted   RecentConfig
}

// NewLoginGate returns a gate.
func NewLoginGate(c GateConfig) *LoginGate {
	return &LoginGate{Pairs: NewBackoff(c.Pairs), Addresses: NewBackoff(c.Addresses), Accounts: NewWindow(c.Accounts), Trusted: NewRecent(c.Trusted)}
}

func pairKey(account, addr string) string { return account + "\x00" + addr }

// Begin reports whether a login of account from addr may start now; when
// it may not, retryAfter is the longest of the waits that apply. An
// attempt that may start from an address without a recent login of the
// account is taken from the account's budget for strangers.
func (g *LoginGate) Begin(account, addr string, now time.Time) (retryAfter time.Duration, ok bool) {
	pair := pairKey(account, addr)
	rp, okP := g.Pairs.Check(pair, now)
	ra, okA := g.Addresses.Check(addr, now)
	if !okP || !okA {
		return max(rp, ra), false
	}
	if g.Trusted.Has(pair, now) {
		return 0, true
	}
	return g.Accounts.Take(account, now)
}

// Failure records a failed login of account from addr and returns the
// longest wait it imposes before that pair's next attempt.
func (g *LoginGate) Failure(account, addr string, now time.Time) time.Duration {
	dp := g.Pairs.Failure(pairKey(account, addr), now)
	da := g.Addresses.Failure(addr, now)
	return max(dp, da)
}

// Success records a successful login of account from addr at now: the
// pair's failures are forgotten and the address is trusted for the
// account.
func (g *LoginGate) Success(account, addr string, now time.Time) {
	pair := pairKey(account, addr)
	g.Pairs.Success(pair)
	g.Trusted.Mark(pair, now)
}
