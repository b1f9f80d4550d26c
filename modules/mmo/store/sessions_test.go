package store_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/internal/pgtest"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

func TestLoginClaims(t *testing.T) {
	both(t, func(t *testing.T, where string) {
		s := open(t, where)
		mustAccount(t, s, "alice")
		must(t, s.StartServer(ctx, "srv-a", 10*time.Second))
		must(t, s.StartServer(ctx, "srv-b", 10*time.Second))
		if _, err := s.ClaimLogin(ctx, "srv-a", "nobody"); !errors.Is(err, store.ErrNoAccount) {
			t.Fatalf("claim of no account: %v", err)
		}
		if _, err := s.ClaimLogin(ctx, "bad server", "alice"); !errors.Is(err, store.ErrBadServerID) {
			t.Fatalf("bad server id: %v", err)
		}
		a, err := s.ClaimLogin(ctx, "srv-a", "Alice")
		must(t, err)
		if a.Account != "alice" || a.Previous != "" || a.Token <= 0 {
			t.Fatalf("first claim %+v", a)
		}
		b, err := s.ClaimLogin(ctx, "srv-b", "alice")
		must(t, err)
		if b.Previous != "srv-a" || b.Token <= a.Token {
			t.Fatalf("takeover %+v after %+v", b, a)
		}
		held, err := s.ServerLogins(ctx, "srv-a")
		must(t, err)
		if len(held) != 0 {
			t.Fatalf("srv-a still holds %v", held)
		}
		held, _ = s.ServerLogins(ctx, "srv-b")
		if held["alice"] != b.Token {
			t.Fatalf("srv-b holds %v", held)
		}
		// A stale release (A's old token) leaves B's login alone.
		must(t, s.ReleaseLogin(ctx, "srv-a", "alice", a.Token))
		if held, _ = s.ServerLogins(ctx, "srv-b"); held["alice"] != b.Token {
			t.Fatalf("a stale release dropped the login: %v", held)
		}
		must(t, s.ReleaseLogin(ctx, "srv-b", "alice", b.Token))
		if held, _ = s.ServerLogins(ctx, "srv-b"); len(held) != 0 {
			t.Fatalf("after release: %v", held)
		}
	})
}

func TestCharacterClaims(t *testing.T) {
	both(t, func(t *testing.T, where string) {
		s := open(t, where)
		mustAccount(t, s, "alice")
		mustAccount(t, s, "bob")
		mustCharacter(t, s, "alice", "Hero")
		must(t, s.StartServer(ctx, "srv-a", 10*time.Second))
		must(t, s.StartServer(ctx, "srv-b", store.MinLease))
		la, err := s.ClaimLogin(ctx, "srv-a", "alice")
		must(t, err)
		if _, err := s.ClaimCharacter(ctx, "srv-a", "alice", la.Token, "Nobody"); !errors.Is(err, store.ErrNoCharacter) {
			t.Fatalf("claim of no character: %v", err)
		}
		if _, err := s.ClaimCharacter(ctx, "srv-a", "alice", la.Token+1000, "Hero"); !errors.Is(err, store.ErrLoginLost) {
			t.Fatalf("claim with a token not held: %v", err)
		}
		lbob, _ := s.ClaimLogin(ctx, "srv-a", "bob")
		if _, err := s.ClaimCharacter(ctx, "srv-a", "bob", lbob.Token, "hero"); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("claim of another's character: %v", err)
		}
		c, err := s.ClaimCharacter(ctx, "srv-a", "alice", la.Token, "HERO")
		must(t, err)
		if c.Name != "Hero" || c.X != 500 {
			t.Fatalf("claimed %+v", c)
		}
		// B takes the login over, but A still plays Hero: B must wait.
		lb, err := s.ClaimLogin(ctx, "srv-b", "alice")
		must(t, err)
		// A's login is gone, so A cannot claim again...
		if _, err := s.ClaimCharacter(ctx, "srv-a", "alice", la.Token, "Hero"); !errors.Is(err, store.ErrLoginLost) {
			t.Fatalf("claim after the login moved: %v", err)
		}
		var busy *store.BusyError
		if _, err := s.ClaimCharacter(ctx, "srv-b", "alice", lb.Token, "Hero"); !errors.As(err, &busy) || busy.Server != "srv-a" || !errors.Is(err, store.ErrCharacterBusy) {
			t.Fatalf("claim of a character in play elsewhere: %v", err)
		}
		// ...but A still saves Hero's position and releases it with the last one.
		if n, err := s.SaveClaimed(ctx, "srv-a", []store.Position{{"Hero", 10, 20}}); n != 1 || err != nil {
			t.Fatalf("A's save: %d %v", n, err)
		}
		if n, err := s.SaveClaimed(ctx, "srv-b", []store.Position{{"Hero", 66, 66}}); n != 0 || err != nil {
			t.Fatalf("B saved a character it does not hold: %d %v", n, err)
		}
		must(t, s.ReleaseCharacter(ctx, "srv-a", store.Position{"Hero", 11, 21}, true))
		if h, _, _ := s.Holder(ctx, "hero"); h != "" {
			t.Fatalf("held by %q after release", h)
		}
		c, err = s.ClaimCharacter(ctx, "srv-b", "alice", lb.Token, "Hero")
		must(t, err)
		if c.X != 11 || c.Y != 21 {
			t.Fatalf("B entered at %v,%v, not where A left", c.X, c.Y)
		}
		// A, partitioned and late, can write nothing now.
		if n, _ := s.SaveClaimed(ctx, "srv-a", []store.Position{{"Hero", 99, 99}}); n != 0 {
			t.Fatal("a server that lost the claim overwrote the position")
		}
		must(t, s.ReleaseCharacter(ctx, "srv-a", store.Position{"Hero", 98, 98}, true))
		if h, _, _ := s.Holder(ctx, "hero"); h != "srv-b" {
			t.Fatalf("A's stale release took B's claim: holder %q", h)
		}
		// B dies (its one-second lease is not renewed): after the lease, A's
		// new login takes the character over.
		la2, err := s.ClaimLogin(ctx, "srv-a", "alice")
		must(t, err)
		if _, err := s.ClaimCharacter(ctx, "srv-a", "alice", la2.Token, "Hero"); !errors.Is(err, store.ErrCharacterBusy) {
			t.Fatalf("claim while B's lease runs: %v", err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := s.ClaimCharacter(ctx, "srv-a", "alice", la2.Token, "Hero")
			if err == nil {
				break
			}
			if !errors.Is(err, store.ErrCharacterBusy) || time.Now().After(deadline) {
				t.Fatalf("claim after B's lease expired: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if h, _, _ := s.Holder(ctx, "hero"); h != "srv-a" {
			t.Fatalf("holder %q", h)
		}
		// A restarts: its claims and logins from before are dropped.
		must(t, s.StartServer(ctx, "srv-a", 10*time.Second))
		if h, _, _ := s.Holder(ctx, "hero"); h != "" {
			t.Fatalf("claim survived the restart: %q", h)
		}
		if held, _ := s.ServerLogins(ctx, "srv-a"); len(held) != 0 {
			t.Fatalf("logins survived the restart: %v", held)
		}
		must(t, s.StopServer(ctx, "srv-a"))
		must(t, s.Check(ctx))
	})
}

// TestLoginNotifications: on PostgreSQL every claim reaches every listener
// as a notice within a second, in commit order (increasing tokens).
func TestLoginNotifications(t *testing.T) {
	pgtest.Need(t)
	where := backends[1].fresh(t)
	s := open(t, where)
	mustAccount(t, s, "alice")
	var mu sync.Mutex
	var got []store.Login
	resynced := make(chan struct{}, 4)
	lctx, cancel := contextWithCancel()
	defer cancel()
	go s.Listen(lctx, store.Listener{
		Notice: func(l store.Login) { mu.Lock(); got = append(got, l); mu.Unlock() },
		Resync: func() { resynced <- struct{}{} },
	})
	select {
	case <-resynced:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not start")
	}
	var claims []store.Login
	for _, srv := range []string{"srv-a", "srv-b", "srv-a"} {
		l, err := s.ClaimLogin(ctx, srv, "alice")
		must(t, err)
		claims = append(claims, l)
	}
	start := time.Now()
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == len(claims) {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%d notices of %d after 5 s", n, len(claims))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("3 notices within %v", time.Since(start))
	for i, l := range got {
		if l != (store.Login{Account: "alice", Server: claims[i].Server, Token: claims[i].Token}) {
			t.Fatalf("notice %d = %+v, claim %+v", i, l, claims[i])
		}
	}
	// SQLite has none.
	sq := open(t, t.TempDir())
	if err := sq.Listen(ctx, store.Listener{}); !errors.Is(err, store.ErrNoNotifications) {
		t.Fatalf("SQLite Listen: %v", err)
	}
}

func TestParseNotice(t *testing.T) {
	if l, err := store.ParseNotice("42 srv-a alice"); err != nil || l != (store.Login{Account: "alice", Server: "srv-a", Token: 42}) {
		t.Fatalf("%+v %v", l, err)
	}
	for _, bad := range []string{"", "42 srv-a", "x srv-a alice", "-1 srv-a alice", "42 srv/a alice", "42 srv-a Alice", "42 srv-a al", "42 srv-a alice extra"} {
		if _, err := store.ParseNotice(bad); err == nil {
			t.Errorf("ParseNotice(%q) accepted", bad)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestPostgresLeastPrivilege: after the owner's first start migrated the
// database, a role with only the privileges docs/mmo.md lists runs the store.
func TestPostgresLeastPrivilege(t *testing.T) {
	c := pgtest.Need(t)
	where := backends[1].fresh(t)
	owner := open(t, where)
	mustAccount(t, owner, "alice")
	conn := pgConn(t, where)
	role := "app_" + where[strings.LastIndexByte(where, '/')+1:strings.IndexByte(where, '?')] // one per database: roles are cluster-wide
	for _, q := range []string{
		`CREATE ROLE ` + role + ` LOGIN PASSWORD 'app-password-1'`,
		`REVOKE CREATE ON SCHEMA public FROM PUBLIC`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ` + role,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ` + role,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	app := strings.Replace(where, "//"+c.User+"@", "//"+role+"@", 1)
	s, err := store.OpenPostgres(ctx, app, "app-password-1", store.Options{})
	must(t, err)
	defer s.Close()
	must(t, s.StartServer(ctx, "srv-a", 10*time.Second))
	l, err := s.ClaimLogin(ctx, "srv-a", "alice")
	must(t, err)
	mustCharacter(t, s, "alice", "Hero")
	_, err = s.ClaimCharacter(ctx, "srv-a", "alice", l.Token, "Hero")
	must(t, err)
	must(t, s.Check(ctx))
}
