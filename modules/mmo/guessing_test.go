package mmo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
)

// guessCount is what one guessing address got.
type guessCount struct {
	wrong, throttled int
	other            error
}

// guessOnce logs p in as account with a wrong password and counts the
// answer in g; a Throttled answer is retried 200 ms later (it costs the
// attacker nothing). It reports false on any other answer.
func guessOnce(p *player, account string, until time.Time, g *guessCount) bool {
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	_, err := p.s.Login(ctx, account, fmt.Sprintf("wrong-%d", g.wrong))
	cancel()
	switch code(err) {
	case mmoproto.AuthFailed:
		g.wrong++
	case mmoproto.Throttled:
		g.throttled++
		time.Sleep(min(200*time.Millisecond, time.Until(until)))
	default:
		g.other = err
		return false
	}
	return true
}

// guessUntil guesses account's password from p until until, as often as
// the server lets it.
func guessUntil(p *player, account string, until time.Time) guessCount {
	var g guessCount
	for time.Now().Before(until) && guessOnce(p, account, until, &g) {
	}
	return g
}

// TestLoginGuessingFromManyAddresses: 40 addresses guess alice's password
// for 20 s, each as often as its own limits allow. The server checks at
// most 10 wrong passwords for the account (10 per minute, whatever the
// number of addresses), and alice logs in from her usual address all the
// while.
func TestLoginGuessingFromManyAddresses(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir, func(c *config.Config) { c.Server.MaxClients = 64 })
	owner := dialFrom(t, srv, "127.0.0.3", "owner")
	_, err := owner.s.Register(bg, "alice", "pw-alice")
	must(t, err)
	_, err = owner.s.Login(bg, "alice", "pw-alice") // her usual address
	must(t, err)
	must(t, owner.s.Logout(bg))

	const addresses, attack = 40, 20 * time.Second
	eves := make([]*player, addresses)
	for i := range eves {
		// Each in its own /24: the transport's per-prefix budgets are not
		// what this test is about.
		eves[i] = dialFrom(t, srv, fmt.Sprintf("127.%d.0.1", 30+i), fmt.Sprint("eve", i))
	}
	start := time.Now()
	until := start.Add(attack)
	counts := make([]guessCount, addresses)
	var wg sync.WaitGroup
	for i, p := range eves {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i] = guessUntil(p, "alice", until)
		}()
	}
	var ownerFailed []string
	for n := 0; time.Now().Before(until); n++ {
		if _, err := owner.s.Login(bg, "alice", "pw-alice"); err != nil {
			ownerFailed = append(ownerFailed, fmt.Sprintf("%.1fs: %v", time.Since(start).Seconds(), err))
		} else {
			must(t, owner.s.Logout(bg))
		}
		time.Sleep(min(2*time.Second, time.Until(until)))
	}
	wg.Wait()
	elapsed := time.Since(start)
	wrong, throttled := 0, 0
	for i, g := range counts {
		if g.other != nil {
			t.Fatalf("address %d: %v", i, g.other)
		}
		wrong += g.wrong
		throttled += g.throttled
	}
	t.Logf("%d addresses guessing one account for %v: %d wrong passwords checked, %d attempts throttled; the owner's logins refused: %d",
		addresses, elapsed.Round(time.Second), wrong, throttled, len(ownerFailed))
	if wrong > 10 {
		t.Errorf("%d wrong passwords checked for one account within %v, want at most 10 a minute", wrong, elapsed.Round(time.Second))
	}
	if len(ownerFailed) > 0 {
		t.Errorf("the owner could not log in from her usual address during the attack: %v", ownerFailed)
	}
	if got := metric(srv, "login_failures_total"); got > 10 {
		t.Errorf("login_failures_total = %v", got)
	}
}

// TestLoginSprayOverManyAccounts: 16 addresses each try a new name with
// every attempt for 10 s (a spray over many accounts, which no account's
// budget holds back). Each address is held to its own growing delays:
// address_free_failures (10) at once, then one after 1, 2 and 4 s.
func TestLoginSprayOverManyAccounts(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir, nil)
	const addresses, spray = 16, 10 * time.Second
	eves := make([]*player, addresses)
	for i := range eves {
		eves[i] = dialFrom(t, srv, fmt.Sprintf("127.%d.0.1", 80+i), fmt.Sprint("eve", i))
	}
	start := time.Now()
	until := start.Add(spray)
	counts := make([]guessCount, addresses)
	var wg sync.WaitGroup
	for i, p := range eves {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(until) && guessOnce(p, fmt.Sprintf("victim%d_%d", i, n), until, &counts[i]); n++ {
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	total, most := 0, 0
	for i, g := range counts {
		if g.other != nil {
			t.Fatalf("address %d: %v", i, g.other)
		}
		total += g.wrong
		most = max(most, g.wrong)
	}
	t.Logf("%d addresses spraying new names for %v: %d wrong passwords checked, at most %d from one address", addresses, elapsed.Round(time.Second), total, most)
	if most > 14 {
		t.Errorf("one address had %d passwords checked in %v, want at most 14 (10 free, then after 1, 2, 4 s)", most, elapsed.Round(time.Second))
	}
}
