package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

func TestBans(t *testing.T) { both(t, testBans) }

func testBans(t *testing.T, where string) {
	s := open(t, where)
	mustAccount(t, s, "alice")
	mustAccount(t, s, "bob")
	if _, ok, err := s.BanOf(ctx, "alice"); ok || err != nil {
		t.Fatalf("BanOf before any ban: %v %v", ok, err)
	}
	if _, err := s.BanAccount(ctx, "nobody", ""); !errors.Is(err, store.ErrNoAccount) {
		t.Fatalf("ban of an unknown account: %v", err)
	}
	if _, err := s.BanAccount(ctx, "b!", ""); !errors.Is(err, store.ErrAccountNameInvalid) {
		t.Fatalf("ban of an invalid name: %v", err)
	}
	for _, bad := range []string{strings.Repeat("x", 201), "line\nbreak", "nul\x00", "\xff", "esc\x1b[2J"} {
		if _, err := s.BanAccount(ctx, "alice", bad); !errors.Is(err, store.ErrBanReason) {
			t.Fatalf("reason %q: %v", bad, err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.StartServer(ctx, "srv-a", 10e9))
	if _, err := s.ClaimLogin(ctx, "srv-a", "alice"); err != nil {
		t.Fatal(err)
	}
	b, err := s.BanAccount(ctx, "ALICE", "cheating")
	if err != nil || b.Account != "alice" || b.Reason != "cheating" || b.Since.UnixMilli() != 1_700_000_000_000 {
		t.Fatalf("ban: %+v %v", b, err)
	}
	// The ban took the login away from the server that held it.
	held, err := s.ServerLogins(ctx, "srv-a")
	must(err)
	if _, ok := held["alice"]; ok {
		t.Fatalf("alice's login is still held after the ban: %v", held)
	}
	// Banning again replaces the reason.
	if b, err := s.BanAccount(ctx, "alice", "cheating, twice"); err != nil || b.Reason != "cheating, twice" {
		t.Fatalf("second ban: %+v %v", b, err)
	}
	_, err = s.BanAccount(ctx, "bob", "")
	must(err)
	s.Close()

	// Bans persist.
	s = open(t, where)
	got, ok, err := s.BanOf(ctx, "Alice")
	if !ok || err != nil || got.Reason != "cheating, twice" {
		t.Fatalf("after reopen: %+v %v %v", got, ok, err)
	}
	list, err := s.Bans(ctx, "", 10)
	if err != nil || len(list) != 2 || list[0].Account != "alice" || list[1].Account != "bob" {
		t.Fatalf("Bans: %+v %v", list, err)
	}
	if n, err := s.CountBans(ctx); n != 2 || err != nil {
		t.Fatalf("CountBans %d %v", n, err)
	}
	must(s.UnbanAccount(ctx, "alice"))
	if err := s.UnbanAccount(ctx, "alice"); !errors.Is(err, store.ErrNotBanned) {
		t.Fatalf("second unban: %v", err)
	}
	if err := s.UnbanAccount(ctx, "nobody"); !errors.Is(err, store.ErrNoAccount) {
		t.Fatalf("unban of an unknown account: %v", err)
	}
	if _, ok, _ := s.BanOf(ctx, "alice"); ok {
		t.Fatal("alice is still banned")
	}
	must(s.Check(ctx))
}

func TestSetVerifier(t *testing.T) {
	both(t, func(t *testing.T, where string) {
		s := open(t, where)
		mustAccount(t, s, "alice")
		v := verifier(9)
		v.Iterations = 600_000
		if err := s.SetVerifier(ctx, "Alice", v); err != nil {
			t.Fatal(err)
		}
		a, err := s.Account(ctx, "alice")
		if err != nil || a.Verifier.Iterations != 600_000 || !bytes.Equal(a.Verifier.Salt, v.Salt) || !bytes.Equal(a.Verifier.StoredKey, v.StoredKey) {
			t.Fatalf("after SetVerifier: %+v %v", a, err)
		}
		if err := s.SetVerifier(ctx, "nobody", v); !errors.Is(err, store.ErrNoAccount) {
			t.Fatalf("unknown account: %v", err)
		}
		v.StoredKey = v.StoredKey[:3]
		if err := s.SetVerifier(ctx, "alice", v); !errors.Is(err, store.ErrBadVerifier) {
			t.Fatalf("bad verifier: %v", err)
		}
	})
}

// TestMigrateToBans: a database at schema version 3 (before bans and
// drains) is migrated forward on open, keeping its accounts.
func TestMigrateToBans(t *testing.T) {
	both(t, func(t *testing.T, where string) {
		s := open(t, where)
		mustAccount(t, s, "alice")
		s.Close()
		if strings.HasPrefix(where, "postgres://") {
			conn := pgConn(t, where)
			for _, q := range []string{`DROP TABLE bans`, `DROP TABLE area_covers`, `UPDATE schema_version SET version = 3`} {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			db := rawDB(t, filepath.Join(where, store.FileName))
			for _, q := range []string{`DROP TABLE bans`, `DROP TABLE area_covers`, fmt.Sprintf("PRAGMA user_version = %d", 3)} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
		}
		s = open(t, where)
		if _, err := s.BanAccount(ctx, "alice", "after migration"); err != nil {
			t.Fatal(err)
		}
		if err := s.Check(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Covers(ctx, "srv-a"); err != nil {
			t.Fatalf("area_covers after the migration: %v", err)
		}
	})
}
