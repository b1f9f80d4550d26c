package kvfile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	kv, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func TestStorePersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.json")
	kv := open(t, path)
	for k, v := range map[string]string{"best": "42", "map": "arena", "motd": "ünïcode ok"} {
		if err := kv.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Set("best", "43"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete("map"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete("absent"); err != nil {
		t.Fatalf("deleting an absent key: %v", err)
	}
	again := open(t, path)
	if got := again.Keys(); !slices.Equal(got, []string{"best", "motd"}) {
		t.Fatalf("keys after reopen: %v", got)
	}
	if v, ok := again.Get("best"); !ok || v != "43" {
		t.Fatalf("best = %q, %v", v, ok)
	}
	if _, ok := again.Get("map"); ok {
		t.Fatal("a deleted key came back")
	}
}

func TestStoreLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.json")
	kv := open(t, path)
	for _, tc := range []struct{ name, key, value string }{
		{"empty key", "", "v"},
		{"key too long", strings.Repeat("k", MaxKVKey+1), "v"},
		{"value too long", "k", strings.Repeat("v", MaxKVValue+1)},
	} {
		if err := kv.Set(tc.key, tc.value); !errors.Is(err, ErrKVFull) {
			t.Errorf("%s: %v, want ErrKVFull", tc.name, err)
		}
	}
	// Fill to just under the total, then one byte too many.
	value := strings.Repeat("v", MaxKVValue)
	n := 0
	for ; ; n++ {
		if err := kv.Set(strconv.Itoa(n), value); err != nil {
			if !errors.Is(err, ErrKVFull) {
				t.Fatal(err)
			}
			break
		}
	}
	if n == 0 || n*(MaxKVValue+1) > MaxKVTotal {
		t.Fatalf("stored %d values of 64 KiB within a 1 MiB store", n)
	}
	// A refused write changes nothing, in memory or on disk.
	if _, ok := kv.Get(strconv.Itoa(n)); ok {
		t.Fatal("the refused key is in the store")
	}
	if got := len(open(t, path).Keys()); got != n {
		t.Fatalf("the file holds %d keys, want %d", got, n)
	}
	// Replacing a value counts only the difference.
	if err := kv.Set("0", "small"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Set(strconv.Itoa(n), "fits now"); err != nil {
		t.Fatalf("after freeing room: %v", err)
	}
}

func TestFailedWriteChangesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "module")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kv := open(t, filepath.Join(dir, "kv.json"))
	if err := kv.Set("keep", "1"); err != nil {
		t.Fatal(err)
	}
	// A file where the directory was: the next atomic write cannot happen.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := kv.Set("keep", "2"); err == nil {
		t.Fatal("a write into an unwritable directory succeeded")
	}
	if err := kv.Set("new", "x"); err == nil {
		t.Fatal("a write into an unwritable directory succeeded")
	}
	if err := kv.Delete("keep"); err == nil {
		t.Fatal("a delete into an unwritable directory succeeded")
	}
	if v, _ := kv.Get("keep"); v != "1" {
		t.Fatalf("keep = %q after failed writes, want the old value", v)
	}
	if _, ok := kv.Get("new"); ok || len(kv.Keys()) != 1 {
		t.Fatalf("failed writes left %v", kv.Keys())
	}
}

func TestDamagedFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.json")
	if err := os.WriteFile(path, []byte(`{"a": "1",`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	if err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), "move it away") {
		t.Fatalf("Open of a damaged file: %v", err)
	}
}

// TestCrashLosesNothingCommitted kills a writer process at arbitrary moments
// (SIGKILL, no chance to flush) and checks the promise: the file is always
// whole, and every write the writer saw succeed is in it.
func TestCrashLosesNothingCommitted(t *testing.T) {
	if os.Getenv("KVFILE_CRASH_WRITER") != "" {
		crashWriter(os.Getenv("KVFILE_CRASH_WRITER"))
		return
	}
	path := filepath.Join(t.TempDir(), "kv.json")
	for round, after := range []int{3, 17, 60} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashLosesNothingCommitted$")
		cmd.Env = append(os.Environ(), "KVFILE_CRASH_WRITER="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		committed := map[string]string{} // the last value of each key the writer saw committed
		writes := 0
		sc := bufio.NewScanner(out)
		for writes < after && sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok {
				committed[k] = v
				writes++
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if writes < after {
			t.Fatalf("round %d: the writer reported %d writes before it ended, want %d", round, writes, after)
		}
		kv, err := Open(path)
		if err != nil {
			t.Fatalf("round %d: after a kill the store does not open: %v", round, err)
		}
		for k, v := range committed {
			if got, ok := kv.Get(k); !ok || got < v { // values only grow (zero-padded counters)
				t.Fatalf("round %d: committed %s=%s, the file has %q (%v)", round, k, v, got, ok)
			}
		}
	}
}

// crashWriter writes counters forever, printing each write once Set
// returned, until it is killed.
func crashWriter(path string) {
	kv, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	start := time.Now().UnixNano()
	for i := 0; ; i++ {
		k := "k" + strconv.Itoa(i%7)
		v := fmt.Sprintf("%020d-%06d", start, i) // grows across rounds and writes
		if err := kv.Set(k, v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("%s=%s\n", k, v)
	}
}
