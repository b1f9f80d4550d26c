package mmo

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestLaneOrderAndCompletions: jobs run one at a time in submission order;
// their completions come back in the same order, for the game thread to
// run; room counts the waiting jobs; close drains them.
func TestLaneOrderAndCompletions(t *testing.T) {
	l := newLane(context.Background(), time.Second)
	release := make(chan struct{})
	var running, maxRunning atomic.Int32
	var order []int
	for i := range laneDepth + 10 {
		l.push(func(ctx context.Context) func() {
			if i == 0 {
				<-release
			}
			n := running.Add(1)
			if n > maxRunning.Load() {
				maxRunning.Store(n)
			}
			running.Add(-1)
			return func() { order = append(order, i) }
		})
	}
	if l.room() {
		t.Fatal("room with more than laneDepth jobs waiting")
	}
	close(release)
	var got []func()
	for deadline := time.Now().Add(20 * time.Second); len(order) < laneDepth+10; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d completions after 20 s", len(order))
		}
		got = l.completions(got)
		for _, f := range got {
			f()
		}
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("completion %d is job %d", i, v)
		}
	}
	if maxRunning.Load() != 1 || !l.room() {
		t.Fatalf("%d jobs ran at once; room %v", maxRunning.Load(), l.room())
	}
	ran := false
	l.push(func(context.Context) func() { time.Sleep(20 * time.Millisecond); ran = true; return nil })
	if !l.close(10*time.Second) || !ran {
		t.Fatal("close did not drain the queue")
	}
	l.push(func(context.Context) func() { t.Error("a job ran after close"); return nil })
	time.Sleep(10 * time.Millisecond)
}

func TestDatabaseConfig(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	r, err := DatabaseConfig{Lease: 10}.Resolve(getenv)
	if err != nil || r.URL != "" || r.Lease != 10*time.Second {
		t.Fatalf("default: %+v %v", r, err)
	}
	if _, err := (DatabaseConfig{URL: "postgres://mmo:s3cret@db/mmo", Lease: 10}).Resolve(getenv); err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), DatabasePasswordEnv) {
		t.Fatalf("password in config.toml: %v", err)
	}
	env[DatabasePasswordEnv] = "pw1"
	r, _ = DatabaseConfig{URL: "postgres://mmo@db/mmo", Lease: 10}.Resolve(getenv)
	if r.Password != "pw1" || r.URL != "postgres://mmo@db/mmo" {
		t.Fatalf("password from the default variable: %+v", r)
	}
	env["MY_PW"] = "pw2"
	env[DatabaseURLEnv] = "postgres://mmo:pw3@db2/mmo"
	r, _ = DatabaseConfig{URL: "postgres://mmo@db/mmo", PasswordEnv: "MY_PW", Lease: 10}.Resolve(getenv)
	if r.Password != "pw2" || r.URL != "postgres://mmo:pw3@db2/mmo" {
		t.Fatalf("URL from the environment, password_env: %+v", r)
	}
	for _, c := range []Config{
		func() Config { c := DefaultConfig(); c.Database.Lease = 1; return c }(),
		func() Config { c := DefaultConfig(); c.Database.Lease = 601; return c }(),
		func() Config { c := DefaultConfig(); c.Database.URL = "mysql://x"; return c }(),
		func() Config {
			c := DefaultConfig()
			c.Database.URL = "postgres://db/x"
			c.Database.PasswordEnv = "BAD-NAME"
			return c
		}(),
	} {
		if err := c.validate(); err == nil {
			t.Errorf("accepted %+v", c.Database)
		}
	}
}
