package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sparkhost/sparkhost/modules/mmo/internal/pgtest"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

var ctx = context.Background()

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main("mmo/store", os.Getenv(writerDirEnv) != "", m.Run))
}

// backend opens databases of one kind. Each test gets a fresh database;
// opening it again (db.open) reopens the same one.
type backend struct {
	name string
	// fresh makes an empty database and returns where it is: a directory
	// (SQLite) or a URL without password (PostgreSQL).
	fresh func(t testing.TB) string
}

var backends = []backend{
	{"sqlite", func(t testing.TB) string { return t.TempDir() }},
	{"postgres", func(t testing.TB) string {
		c := pgtest.Need(t)
		name, err := c.CreateDB(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c.URLWithoutPassword(name)
	}},
}

// openAt opens the database at where (see backend.fresh) with opt.
func openAt(t testing.TB, where string, opt store.Options) (*store.Store, error) {
	if strings.HasPrefix(where, "postgres://") {
		pw := os.Getenv(pgtest.PasswordEnv) // a writer process
		if pgtest.Shared != nil {
			pw = pgtest.Shared.Password
		}
		return store.OpenPostgres(ctx, where, pw, opt)
	}
	return store.Open(ctx, where, opt)
}

var fixedNow = store.Options{Now: func() time.Time { return time.UnixMilli(1_700_000_000_000) }}

func open(t testing.TB, where string) *store.Store {
	t.Helper()
	s, err := openAt(t, where, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// both runs f as a subtest on each backend, on a fresh database.
func both(t *testing.T, f func(t *testing.T, where string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b.fresh(t)) })
	}
}

func verifier(b byte) store.Verifier {
	return store.Verifier{
		Salt:       bytes.Repeat([]byte{b}, 16),
		Iterations: 4096,
		StoredKey:  bytes.Repeat([]byte{b + 1}, 32),
		ServerKey:  bytes.Repeat([]byte{b + 2}, 32),
	}
}

func mustAccount(t testing.TB, s *store.Store, name string) store.Account {
	t.Helper()
	a, err := s.CreateAccount(ctx, name, verifier(1))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustCharacter(t testing.TB, s *store.Store, account, name string) store.Character {
	t.Helper()
	c, err := s.CreateCharacter(ctx, account, name, 500, 500)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOpenSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mmo")
	s := open(t, dir)
	info, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("database file mode %v, want 0600", info.Mode().Perm())
	}
	if d, _ := os.Stat(dir); d.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", d.Mode().Perm())
	}
	db := rawDB(t, s.Path())
	var mode string
	var version int
	db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	db.QueryRow("PRAGMA user_version").Scan(&version)
	if mode != "wal" || version != store.SchemaVersion {
		t.Fatalf("journal_mode %q, user_version %d", mode, version)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestRefusesNewerSchema(t *testing.T) {
	both(t, func(t *testing.T, where string) {
		s := open(t, where)
		s.Close()
		if strings.HasPrefix(where, "postgres://") {
			conn := pgConn(t, where)
			if _, err := conn.Exec(ctx, `UPDATE schema_version SET version = $1`, store.SchemaVersion+1); err != nil {
				t.Fatal(err)
			}
		} else {
			db := rawDB(t, filepath.Join(where, store.FileName))
			if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", store.SchemaVersion+1)); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}
		_, err := openAt(t, where, store.Options{})
		if !errors.Is(err, store.ErrSchemaTooNew) || !strings.Contains(err.Error(), "newer sparkhost") {
			t.Fatalf("Open of a newer database: %v", err)
		}
	})
}

// pgConn is a direct connection to the test database at url (no password).
func pgConn(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = pgtest.Shared.Password
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

func TestReopenKeepsData(t *testing.T) { both(t, testReopenKeepsData) }

func testReopenKeepsData(t *testing.T, dir string) {
	s, err := openAt(t, dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAccount(t, s, "alice")
	mustCharacter(t, s, "alice", "Hero")
	if err := s.SavePosition(ctx, "hero", 12.5, 99.25); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir)
	c, err := s.Character(ctx, "HERO")
	if err != nil || c.Name != "Hero" || c.Account != "alice" || c.X != 12.5 || c.Y != 99.25 {
		t.Fatalf("after reopen: %+v, %v", c, err)
	}
}

func TestAccounts(t *testing.T) { both(t, testAccounts) }

func testAccounts(t *testing.T, where string) {
	s := open(t, where)
	a, err := s.CreateAccount(ctx, "Alice_01", verifier(5))
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "alice_01" || a.ID == 0 || a.Created.UnixMilli() != 1_700_000_000_000 {
		t.Fatalf("created %+v", a)
	}
	if _, err := s.CreateAccount(ctx, "ALICE_01", verifier(6)); !errors.Is(err, store.ErrAccountExists) {
		t.Fatalf("same name in other case: %v", err)
	}
	got, err := s.Account(ctx, "aLiCe_01")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "alice_01" || !bytes.Equal(got.Verifier.Salt, verifier(5).Salt) || got.Verifier.Iterations != 4096 ||
		!bytes.Equal(got.Verifier.StoredKey, verifier(5).StoredKey) || !bytes.Equal(got.Verifier.ServerKey, verifier(5).ServerKey) {
		t.Fatalf("read back %+v", got)
	}
	if _, err := s.Account(ctx, "bob"); !errors.Is(err, store.ErrNoAccount) {
		t.Fatalf("missing account: %v", err)
	}
	for _, name := range []string{"", "ab", strings.Repeat("a", 25), "has space", "dash-ed", "caf\u00e9", "semi;colon", "nul\x00"} {
		if _, err := s.CreateAccount(ctx, name, verifier(1)); !errors.Is(err, store.ErrAccountNameInvalid) {
			t.Errorf("CreateAccount(%q): %v", name, err)
		}
		if _, err := s.Account(ctx, name); !errors.Is(err, store.ErrAccountNameInvalid) {
			t.Errorf("Account(%q): %v", name, err)
		}
	}
	for _, bad := range []func(*store.Verifier){
		func(v *store.Verifier) { v.Salt = nil },
		func(v *store.Verifier) { v.Salt = make([]byte, 65) },
		func(v *store.Verifier) { v.Iterations = 0 },
		func(v *store.Verifier) { v.StoredKey = v.StoredKey[:31] },
		func(v *store.Verifier) { v.ServerKey = append(v.ServerKey, 0) },
	} {
		v := verifier(1)
		bad(&v)
		if _, err := s.CreateAccount(ctx, "carol", v); !errors.Is(err, store.ErrBadVerifier) {
			t.Errorf("bad verifier %+v: %v", v, err)
		}
	}
	for _, n := range []string{"zed", "bob", "mia", "abc_123", strings.Repeat("z", 24)} {
		mustAccount(t, s, n)
	}
	if n, err := s.CountAccounts(ctx); err != nil || n != 6 {
		t.Fatalf("CountAccounts = %d, %v", n, err)
	}
	mustCharacter(t, s, "bob", "Bobby")
	page1, err := s.ListAccounts(ctx, "", 4)
	if err != nil || len(page1) != 4 {
		t.Fatalf("page 1: %v %v", page1, err)
	}
	page2, err := s.ListAccounts(ctx, page1[3].Name, 100)
	if err != nil || len(page2) != 2 {
		t.Fatalf("page 2: %v %v", page2, err)
	}
	var names []string
	for _, a := range append(page1, page2...) {
		names = append(names, a.Name)
		if (a.Name == "bob") != (a.Characters == 1) {
			t.Errorf("%s has %d characters", a.Name, a.Characters)
		}
	}
	if strings.Join(names, ",") != "abc_123,alice_01,bob,mia,zed,"+strings.Repeat("z", 24) {
		t.Fatalf("order %v", names)
	}
}

func TestCharacters(t *testing.T) { both(t, testCharacters) }

func testCharacters(t *testing.T, where string) {
	s := open(t, where)
	mustAccount(t, s, "alice")
	mustAccount(t, s, "bob")
	for _, n := range []string{"Aaa", "Bbb", "Ccc", "Ddd", "Eee"} {
		mustCharacter(t, s, "alice", n)
	}
	if _, err := s.CreateCharacter(ctx, "alice", "Fff", 0, 0); !errors.Is(err, store.ErrTooManyCharacters) {
		t.Fatalf("sixth character: %v", err)
	}
	if _, err := s.CreateCharacter(ctx, "bob", "AAA", 0, 0); !errors.Is(err, store.ErrCharacterExists) {
		t.Fatalf("taken name in other case: %v", err)
	}
	if _, err := s.CreateCharacter(ctx, "nobody", "Zzz", 0, 0); !errors.Is(err, store.ErrNoAccount) {
		t.Fatalf("no account: %v", err)
	}
	if _, err := s.CreateCharacter(ctx, "bob", "Zzz", math.NaN(), 0); !errors.Is(err, store.ErrBadPosition) {
		t.Fatalf("NaN position: %v", err)
	}
	for _, name := range []string{"ab", strings.Repeat("a", 17), "Bob1", "Bo b", "B\u00f6b", "Bo_b", ""} {
		if _, err := s.CreateCharacter(ctx, "bob", name, 0, 0); !errors.Is(err, store.ErrCharacterNameInvalid) {
			t.Errorf("CreateCharacter(%q): %v", name, err)
		}
	}
	list, err := s.Characters(ctx, "ALICE")
	if err != nil || len(list) != 5 || list[0].Name != "Aaa" || list[4].Name != "Eee" || list[0].Account != "alice" {
		t.Fatalf("Characters = %+v, %v", list, err)
	}
	if list, err := s.Characters(ctx, "bob"); err != nil || len(list) != 0 || list == nil {
		t.Fatalf("no characters: %#v, %v", list, err)
	}
	if _, err := s.Characters(ctx, "nobody"); !errors.Is(err, store.ErrNoAccount) {
		t.Fatalf("Characters of no account: %v", err)
	}
	if err := s.DeleteCharacter(ctx, "bob", "aaa"); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("deleting another's character: %v", err)
	}
	if _, err := s.Character(ctx, "aaa"); err != nil {
		t.Fatalf("the refused delete deleted: %v", err)
	}
	if err := s.DeleteCharacter(ctx, "alice", "nope"); !errors.Is(err, store.ErrNoCharacter) {
		t.Fatalf("deleting a missing character: %v", err)
	}
	if err := s.DeleteCharacter(ctx, "Alice", "AAA"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Character(ctx, "Aaa"); !errors.Is(err, store.ErrNoCharacter) {
		t.Fatalf("deleted character still there: %v", err)
	}
	// The freed slot and the freed name can be used again.
	mustCharacter(t, s, "bob", "Aaa")
	mustCharacter(t, s, "alice", "Fff")
}

func TestCharacterLimitUnderConcurrency(t *testing.T) { both(t, testCharacterLimitUnderConcurrency) }

func testCharacterLimitUnderConcurrency(t *testing.T, where string) {
	s := open(t, where)
	mustAccount(t, s, "alice")
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.CreateCharacter(ctx, "alice", "Hero"+string(rune('a'+i)), 0, 0)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrTooManyCharacters):
			t.Errorf("unexpected error %v", err)
		}
	}
	list, _ := s.Characters(ctx, "alice")
	if ok != store.DefaultMaxCharacters || len(list) != store.DefaultMaxCharacters {
		t.Fatalf("%d creations succeeded, %d stored; want %d", ok, len(list), store.DefaultMaxCharacters)
	}
}

func TestSavePositions(t *testing.T) { both(t, testSavePositions) }

func testSavePositions(t *testing.T, where string) {
	s := open(t, where)
	mustAccount(t, s, "alice")
	mustCharacter(t, s, "alice", "Aaa")
	mustCharacter(t, s, "alice", "Bbb")
	n, err := s.SavePositions(ctx, []store.Position{{"aaa", 1, 2}, {"BBB", 3, 4}, {"Gone", 5, 6}})
	if err != nil || n != 2 {
		t.Fatalf("SavePositions = %d, %v", n, err)
	}
	a, _ := s.Character(ctx, "Aaa")
	b, _ := s.Character(ctx, "Bbb")
	if a.X != 1 || a.Y != 2 || b.X != 3 || b.Y != 4 {
		t.Fatalf("positions %+v %+v", a, b)
	}
	// One bad entry fails the whole batch before anything is written.
	if _, err := s.SavePositions(ctx, []store.Position{{"Aaa", 7, 7}, {"Bbb", math.Inf(1), 0}}); !errors.Is(err, store.ErrBadPosition) {
		t.Fatalf("infinite position: %v", err)
	}
	if _, err := s.SavePositions(ctx, []store.Position{{"Aaa", 7, 7}, {"B", 0, 0}}); !errors.Is(err, store.ErrCharacterNameInvalid) {
		t.Fatalf("invalid name: %v", err)
	}
	if a, _ := s.Character(ctx, "Aaa"); a.X != 1 {
		t.Fatalf("a failed batch wrote: %+v", a)
	}
	if err := s.SavePosition(ctx, "Nobody", 1, 1); !errors.Is(err, store.ErrNoCharacter) {
		t.Fatalf("SavePosition of a missing character: %v", err)
	}
	if n, err := s.SavePositions(ctx, nil); n != 0 || err != nil {
		t.Fatalf("empty batch: %d %v", n, err)
	}
}

// TestRegistrationRace: many connections register one name (in different
// cases) at once; exactly one succeeds, every other gets ErrAccountExists.
func TestRegistrationRace(t *testing.T) {
	both(t, func(t *testing.T, where string) {
		s := open(t, where)
		const n = 24
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				name := "racer"
				if i%2 == 1 {
					name = "RACER"
				}
				_, errs[i] = s.CreateAccount(ctx, name, verifier(byte(i)))
			}()
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, store.ErrAccountExists):
				t.Errorf("unexpected error %v", err)
			}
		}
		if n, _ := s.CountAccounts(ctx); ok != 1 || n != 1 {
			t.Fatalf("%d registrations succeeded, %d accounts stored; want 1 and 1", ok, n)
		}
	})
}

// TestSerializationRetries: on PostgreSQL, goroutines racing to create an
// account's sixth character conflict under SERIALIZABLE; the losers'
// transactions fail with 40001 and are retried, and the limit holds: exactly
// five characters in every round. The test runs rounds until it has seen
// retries (the first round almost always has them).
func TestSerializationRetries(t *testing.T) {
	c := pgtest.Need(t)
	name, err := c.CreateDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenPostgres(ctx, c.URLWithoutPassword(name), c.Password, store.Options{MaxConns: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for round := 0; round < 10; round++ {
		account := fmt.Sprintf("acct%d", round)
		mustAccount(t, s, account)
		const n = 16
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = s.CreateCharacter(ctx, account, fmt.Sprintf("R%cx%c", 'a'+round, 'a'+i), 0, 0)
			}()
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, store.ErrTooManyCharacters):
				t.Fatalf("unexpected error %v", err)
			}
		}
		list, _ := s.Characters(ctx, account)
		if ok != store.DefaultMaxCharacters || len(list) != store.DefaultMaxCharacters {
			t.Fatalf("round %d: %d creations succeeded, %d stored; want %d", round, ok, len(list), store.DefaultMaxCharacters)
		}
		if r := s.Retried(); r > 0 {
			t.Logf("round %d: %d retried transactions so far", round, r)
			return
		}
	}
	t.Fatal("ten rounds of 16 racing transactions and not one serialization failure retried")
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://mmo:s3cret@db:5432/mmo?sslmode=require", "postgres://mmo:xxxxx@db:5432/mmo?sslmode=require"},
		{"postgres://mmo@db/mmo", "postgres://mmo@db/mmo"},
		{"postgres://db/mmo?password=s3cret&sslmode=disable", "postgres://db/mmo?password=xxxxx&sslmode=disable"},
		{"::not a url", "(an unparsable database URL)"},
	} {
		if got := store.Redact(tc.in); got != tc.want || strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A refused connection's error names the database but not the password.
	_, err := store.OpenPostgres(ctx, "postgres://mmo:hunter2hunter2@127.0.0.1:1/mmo?connect_timeout=2", "", store.Options{})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "xxxxx@127.0.0.1:1") {
		t.Fatalf("error of a refused connection: %v", err)
	}
	_, err = store.OpenPostgres(ctx, "postgres://mmo@127.0.0.1:1/mmo?connect_timeout=2", "hunter2hunter2", store.Options{})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error of a refused connection: %v", err)
	}
	if _, err := store.OpenPostgres(ctx, "host=db user=mmo password=x", "", store.Options{}); !errors.Is(err, store.ErrBadURL) || strings.Contains(err.Error(), "password=x") {
		t.Fatalf("key=value connection string: %v", err)
	}
}

func contextWithCancel() (context.Context, context.CancelFunc) { return context.WithCancel(ctx) }
