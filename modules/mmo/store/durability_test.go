package store_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/modules/mmo/internal/pgtest"
	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// The durability test runs a writer in a separate process (this test binary
// again, selecting TestDurabilityWriter through these variables), kills it with
// SIGKILL at some point, and checks that everything the writer reported as
// committed is in the database and that the database is intact.
const (
	writerDirEnv   = "MMO_STORE_WRITER_DIR"
	writerRoundEnv = "MMO_STORE_WRITER_ROUND"
	writerMaxOps   = 20_000 // bounds the writer if nobody kills it
)

// TestDurabilityWriter is the writer process; run directly it skips. It
// commits accounts, characters and positions in a loop and prints one line
// per commit, after the commit returned.
func TestDurabilityWriter(t *testing.T) {
	dir := os.Getenv(writerDirEnv)
	if dir == "" {
		t.Skip("the writer process of TestDurabilityUnderSIGKILL")
	}
	round, _ := strconv.Atoi(os.Getenv(writerRoundEnv))
	s, err := openAt(t, dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < writerMaxOps; i++ {
		account := fmt.Sprintf("r%d_acct%d", round, i)
		if _, err := s.CreateAccount(ctx, account, verifier(byte(i))); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("A %s\n", account)
		char := writerCharacter(round, i)
		if _, err := s.CreateCharacter(ctx, account, char, 0, 0); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("C %s %s\n", char, account)
		if err := s.SavePosition(ctx, char, float64(i), 1); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("P %s %d\n", char, i)
	}
}

// writerCharacter is a letters-only character name unique per round and i.
func writerCharacter(round, i int) string {
	b := []byte{'W', byte('a' + round)}
	for k := 0; k < 4; k++ {
		b = append(b, byte('a'+i%26))
		i /= 26
	}
	return string(b)
}

type committed struct {
	accounts   []string
	characters map[string]string  // name → account
	positions  map[string]float64 // name → last reported x
}

func TestDurabilityUnderSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts writer processes")
	}
	both(t, func(t *testing.T, dir string) {
		want := committed{characters: map[string]string{}, positions: map[string]float64{}}
		// Kill after a few, some and many reported commits; each round also
		// recovers the database the previous round's kill left behind.
		for round, killAfter := range []int{5, 61, 250} {
			lines := runWriter(t, dir, round, killAfter, &want, nil)
			t.Logf("round %d: killed after %d reported commits", round, lines)
			verifyCommitted(t, dir, &want)
		}
	})
}

// TestDurabilityPostgresKilled: kill -9 of the PostgreSQL server itself
// (postmaster and backends) while a writer commits: after crash recovery,
// everything the writer was told was committed is there.
func TestDurabilityPostgresKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a writer process and kills the database")
	}
	c := pgtest.Need(t)
	where := backends[1].fresh(t)
	want := committed{characters: map[string]string{}, positions: map[string]float64{}}
	lines := runWriter(t, where, 0, 120, &want, c.Kill)
	t.Logf("postgres killed after %d reported commits", lines)
	verifyCommitted(t, where, &want)
}

// runWriter starts a writer, records the commits it reports, kills it with
// SIGKILL after killAfter reports (or calls kill instead, if not nil), and
// returns how many it read in all.
func runWriter(t *testing.T, dir string, round, killAfter int, want *committed, kill func()) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDurabilityWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), writerDirEnv+"="+dir, writerRoundEnv+"="+strconv.Itoa(round))
	if pgtest.Shared != nil {
		cmd.Env = append(cmd.Env, pgtest.PasswordEnv+"="+pgtest.Shared.Password)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watchdog := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	sc := bufio.NewScanner(out)
	lines, killed := 0, false
	for sc.Scan() {
		// Lines written before the kill are commits too, so reading goes on
		// until the pipe closes.
		if !record(sc.Text(), want) {
			continue
		}
		lines++
		if lines == killAfter && !killed {
			killed = true
			if kill != nil {
				go kill() // the writer fails and exits when its database dies
				continue
			}
			if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
				t.Fatal(err)
			}
		}
	}
	cmd.Wait()
	if kill != nil {
		// The restart must be done before the database is read.
		if err := pgtest.Shared.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	if !killed {
		t.Fatalf("round %d: the writer stopped after %d commits before it was killed:\n%s", round, lines, stderr.String())
	}
	return lines
}

// record notes one reported commit; other output is ignored.
func record(line string, want *committed) bool {
	f := strings.Fields(line)
	switch {
	case len(f) == 2 && f[0] == "A":
		want.accounts = append(want.accounts, f[1])
	case len(f) == 3 && f[0] == "C":
		want.characters[f[1]] = f[2]
	case len(f) == 3 && f[0] == "P":
		x, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return false
		}
		want.positions[f[1]] = x
	default:
		return false
	}
	return true
}

func verifyCommitted(t *testing.T, dir string, want *committed) {
	t.Helper()
	s := open(t, dir)
	defer s.Close()
	if err := s.Check(ctx); err != nil {
		t.Fatalf("after SIGKILL: %v", err)
	}
	for _, a := range want.accounts {
		if _, err := s.Account(ctx, a); err != nil {
			t.Fatalf("committed account %s: %v", a, err)
		}
	}
	for name, owner := range want.characters {
		c, err := s.Character(ctx, name)
		if err != nil || c.Account != owner {
			t.Fatalf("committed character %s of %s: %+v, %v", name, owner, c, err)
		}
	}
	for name, x := range want.positions {
		if c, _ := s.Character(ctx, name); c.X != x {
			t.Fatalf("committed position of %s: x = %v, want %v", name, c.X, x)
		}
	}
	n, err := s.CountAccounts(ctx)
	if err != nil || n < len(want.accounts) {
		t.Fatalf("%d accounts stored, %d reported committed (%v)", n, len(want.accounts), err)
	}
}
