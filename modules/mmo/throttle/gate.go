package throttle

import "time"

// LoginGate throttles logins per account name and per source address. A login
// may proceed only when neither is locked; a failure counts against both; a
// success clears the account's count but not the address's, so that an
// attacker cannot reset the address limit by logging into an account of its
// own between guesses.
//
// Keys are used as given: the caller folds account names to their canonical
// form and passes the address without its port (one host, many ports).
type LoginGate struct {
	Accounts  *Limiter
	Addresses *Limiter
}

// NewLoginGate returns a gate with a Limiter for accounts and one for
// addresses.
func NewLoginGate(accounts, addresses Config) *LoginGate {
	return &LoginGate{Accounts: New(accounts), Addresses: New(addresses)}
}

// Check reports whether a login of account from addr may proceed now; when it
// may not, retryAfter is the longer of the two lockouts' remaining time.
func (g *LoginGate) Check(account, addr string, now time.Time) (retryAfter time.Duration, ok bool) {
	ra, okA := g.Accounts.Check(account, now)
	rb, okB := g.Addresses.Check(addr, now)
	return max(ra, rb), okA && okB
}

// Failure records a failed login of account from addr and reports whether
// either key is now locked.
func (g *LoginGate) Failure(account, addr string, now time.Time) (retryAfter time.Duration, locked bool) {
	ra, lockedA := g.Accounts.Failure(account, now)
	rb, lockedB := g.Addresses.Failure(addr, now)
	return max(ra, rb), lockedA || lockedB
}

// Success records a successful login of account from addr.
func (g *LoginGate) Success(account, addr string) { g.Accounts.Success(account) }
