package bans

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func mustAdd(t *testing.T, s *Store, b Ban) {
	t.Helper()
	if err := s.Add(b); err != nil {
		t.Fatalf("Add(%v): %v", b.Addr, err)
	}
}

var (
	addrA = netip.MustParseAddr("203.0.113.7")
	addrB = netip.MustParseAddr("192.168.1.20")
	addr6 = netip.MustParseAddr("2001:db8::1")
)

func TestMissingFileIsEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := open(t, path)
	if len(s.List()) != 0 || s.IsBanned(addrA, t0) {
		t.Fatal("a missing file is not an empty list")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open created the file: %v", err)
	}
	if s.Path() != path {
		t.Errorf("Path = %q", s.Path())
	}
}

func TestAddRemove(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), FileName))
	mustAdd(t, s, Ban{Addr: addrA, Reason: "spam", By: "admin", At: t0})
	if !s.IsBanned(addrA, t0) || !s.IsBanned(addrA, t0.Add(100*365*24*time.Hour)) {
		t.Fatal("a permanent ban does not hold")
	}
	if s.IsBanned(addrB, t0) {
		t.Fatal("an address that was never banned is banned")
	}
	removed, err := s.Remove(addrA)
	if err != nil || !removed {
		t.Fatalf("Remove = %v, %v", removed, err)
	}
	if s.IsBanned(addrA, t0) {
		t.Fatal("still banned after Remove")
	}
	removed, err = s.Remove(addrA)
	if err != nil || removed {
		t.Fatalf("second Remove = %v, %v; want false, nil", removed, err)
	}
}

func TestAddReplacesTheBanOfAnAddress(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), FileName))
	mustAdd(t, s, Ban{Addr: addrA, Reason: "first", At: t0, Until: t0.Add(time.Hour)})
	mustAdd(t, s, Ban{Addr: addrA, Reason: "second", At: t0.Add(time.Minute)})
	list := s.List()
	if len(list) != 1 || list[0].Reason != "second" || !list[0].Permanent() {
		t.Fatalf("List = %+v", list)
	}
}

func TestExpiry(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), FileName))
	mustAdd(t, s, Ban{Addr: addrA, At: t0, Until: t0.Add(time.Hour)})
	cases := []struct {
		at   time.Time
		want bool
	}{
		{t0, true},
		{t0.Add(time.Hour - time.Nanosecond), true},
		{t0.Add(time.Hour), false},
		{t0.Add(48 * time.Hour), false},
	}
	for _, tc := range cases {
		if got := s.IsBanned(addrA, tc.at); got != tc.want {
			t.Errorf("IsBanned at %v = %v; want %v", tc.at.Sub(t0), got, tc.want)
		}
	}
	// An expired ban is still listed (and removable) until a later Add
	// drops it.
	if len(s.List()) != 1 {
		t.Fatal("expired ban not listed")
	}
	mustAdd(t, s, Ban{Addr: addrB, At: t0.Add(2 * time.Hour)})
	if list := s.List(); len(list) != 1 || list[0].Addr != addrB {
		t.Fatalf("after a later Add: %+v; want only %v", list, addrB)
	}
	if _, ok := s.Lookup(addrA); ok {
		t.Fatal("the expired ban survived the later Add")
	}
}

func TestAddRefusesBadBans(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), FileName))
	if err := s.Add(Ban{At: t0}); err == nil {
		t.Error("a ban without an address was accepted")
	}
	if err := s.Add(Ban{Addr: addrA, At: t0, Until: t0}); err == nil || !strings.Contains(err.Error(), "before it starts") {
		t.Errorf("a ban ending when it starts: %v", err)
	}
	if len(s.List()) != 0 {
		t.Error("a refused ban was stored")
	}
}

func TestAddFillsInTheTime(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), FileName))
	before := time.Now()
	mustAdd(t, s, Ban{Addr: addrA})
	if b, _ := s.Lookup(addrA); b.At.Before(before) || b.At.After(time.Now()) {
		t.Fatalf("At = %v; want now", b.At)
	}
}

func TestAddressSpellings(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), FileName))
	mustAdd(t, s, Ban{Addr: netip.MustParseAddr("::ffff:203.0.113.7"), At: t0})
	if !s.IsBanned(addrA, t0) {
		t.Error("a ban of ::ffff:203.0.113.7 does not refuse 203.0.113.7")
	}
	mustAdd(t, s, Ban{Addr: addrB, At: t0})
	if !s.IsBanned(netip.MustParseAddr("::ffff:192.168.1.20"), t0) {
		t.Error("a ban of 192.168.1.20 does not refuse its IPv4-mapped form")
	}
	mustAdd(t, s, Ban{Addr: netip.MustParseAddr("fe80::1%eth0"), At: t0})
	if !s.IsBanned(netip.MustParseAddr("fe80::1"), t0) || !s.IsBanned(netip.MustParseAddr("fe80::1%eth1"), t0) {
		t.Error("zones split one address")
	}
	if removed, _ := s.Remove(netip.MustParseAddr("::ffff:192.168.1.20")); !removed {
		t.Error("Remove by the mapped form failed")
	}
}

func TestPersistenceAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := open(t, path)
	want := []Ban{
		{Addr: addrB, Reason: "griefing", By: "mod.anticheat", At: t0, Until: t0.Add(24 * time.Hour)},
		{Addr: addrA, Reason: `spam "quoted" ünïcode`, By: "admin", At: t0.Add(time.Second)},
		{Addr: addr6, At: t0.Add(2 * time.Second)},
	}
	for _, b := range want {
		mustAdd(t, s, b)
	}
	mustAdd(t, s, Ban{Addr: netip.MustParseAddr("10.0.0.1"), At: t0})
	if _, err := s.Remove(netip.MustParseAddr("10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	again := open(t, path)
	got := again.List()
	if len(got) != len(want) {
		t.Fatalf("reopened list has %d bans; want %d: %+v", len(got), len(want), got)
	}
	// List is sorted by address: 192.168.1.20, 203.0.113.7, 2001:db8::1.
	for i, w := range want {
		g := got[i]
		if g.Addr != w.Addr || g.Reason != w.Reason || g.By != w.By || !g.At.Equal(w.At) || !g.Until.Equal(w.Until) {
			t.Errorf("ban %d after reopen = %+v; want %+v", i, g, w)
		}
	}
	if !again.IsBanned(addrA, t0.Add(1000*time.Hour)) || again.IsBanned(addrB, t0.Add(25*time.Hour)) {
		t.Error("reopened bans do not behave as before")
	}
}

func TestFileFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := open(t, path)
	mustAdd(t, s, Ban{Addr: addrA, Reason: "spam", By: "admin", At: t0})
	mustAdd(t, s, Ban{Addr: addrB, At: t0, Until: t0.Add(time.Hour)})
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "version": 2,
  "bans": [
    {
      "addr": "192.168.1.20",
      "at": "2025-01-02T15:04:05Z",
      "until": "2025-01-02T16:04:05Z"
    },
    {
      "addr": "203.0.113.7",
      "reason": "spam",
      "by": "admin",
      "at": "2025-01-02T15:04:05Z"
    }
  ]
}
`
	if string(raw) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", raw, want)
	}
}

func TestFileModeAndNoTempFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := open(t, path)
	for i := range 5 {
		mustAdd(t, s, Ban{Addr: netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), At: t0})
	}
	s.Remove(netip.AddrFrom4([4]byte{10, 0, 0, 0}))
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ban file mode %v, %v; want 0600", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("directory holds %v; want only %s", names, FileName)
	}
}

func TestFailedWriteChangesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := open(t, path)
	mustAdd(t, s, Ban{Addr: addrA, At: t0})
	// A directory where the temp file would be renamed to makes the
	// rename fail.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := s.Add(Ban{Addr: addrB, At: t0})
	if err == nil || !strings.Contains(err.Error(), "the ban list is unchanged") {
		t.Fatalf("Add over a blocked file: %v", err)
	}
	if s.IsBanned(addrB, t0) || !s.IsBanned(addrA, t0) {
		t.Fatal("the in-memory list changed though the write failed")
	}
	if removed, err := s.Remove(addrA); err == nil || removed || !s.IsBanned(addrA, t0) {
		t.Fatalf("Remove over a blocked file = %v, %v", removed, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("a temporary file was left: %d entries", len(entries))
	}
}

func TestCorruptFileRefused(t *testing.T) {
	cases := map[string]string{
		"not json":          "this is not json",
		"truncated":         `{"version":1,"bans":[{"addr":"1.2.3.4"`,
		"wrong version":     `{"version":3,"bans":[]}`,
		"no version":        `{"bans":[]}`,
		"bad address":       `{"version":1,"bans":[{"addr":"1.2.3.400","at":"2025-01-02T15:04:05Z"}]}`,
		"duplicate address": `{"version":1,"bans":[{"addr":"1.2.3.4"},{"addr":"::ffff:1.2.3.4"}]}`,
		"unknown field":     `{"version":1,"bans":[{"addr":"1.2.3.4","untill":"2025-01-02T15:04:05Z"}]}`,
		"trailing data":     `{"version":1,"bans":[]} {}`,
		"bad time":          `{"version":1,"bans":[{"addr":"1.2.3.4","at":"yesterday"}]}`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move it away") {
				t.Fatalf("Open = %v; want ErrCorrupt naming the file and the fix", err)
			}
			if raw, _ := os.ReadFile(path); string(raw) != content {
				t.Fatal("the damaged file was changed")
			}
		})
	}
}

func TestEmptyFileIsEmptyList(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := open(t, path); len(s.List()) != 0 {
		t.Fatal("an emptied file is not an empty list")
	}
}

func TestConcurrentUse(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), FileName))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 { // Connect handlers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					s.IsBanned(addrA, t0)
					s.List()
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for g := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range 10 {
				a := netip.AddrFrom4([4]byte{10, byte(g), 0, byte(i)})
				if err := s.Add(Ban{Addr: a, At: t0}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	if n := len(s.List()); n != 40 {
		t.Fatalf("%d bans; want 40", n)
	}
	if n := len(open(t, s.Path()).List()); n != 40 {
		t.Fatalf("%d bans on disk; want 40", n)
	}
}

func TestIsBannedAllocatesNothing(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), FileName))
	for i := range 100 {
		mustAdd(t, s, Ban{Addr: netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), At: t0})
	}
	mapped := netip.MustParseAddr("::ffff:10.0.0.5")
	if n := testing.AllocsPerRun(1000, func() {
		s.IsBanned(addrA, t0)
		s.IsBanned(mapped, t0)
	}); n != 0 {
		t.Fatalf("IsBanned allocates %v times per call", n)
	}
}

func BenchmarkIsBanned(b *testing.B) {
	m := newSet()
	for i := range 1000 {
		a := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		m.addrs[a] = Ban{Addr: a, At: t0}
	}
	raw, err := encode(m)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), FileName)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	addrs := []netip.Addr{addrA, netip.MustParseAddr("10.0.1.2"), addr6}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s.IsBanned(addrs[i%len(addrs)], t0)
			i++
		}
	})
}

func ExampleStore() {
	dir, _ := os.MkdirTemp("", "bans")
	defer os.RemoveAll(dir)
	s, _ := Open(filepath.Join(dir, FileName))
	at := time.Date(2025, 1, 2, 15, 0, 0, 0, time.UTC)
	s.Add(Ban{Addr: netip.MustParseAddr("203.0.113.7"), Reason: "spam", By: "admin", At: at, Until: at.Add(time.Hour)})
	fmt.Println(s.IsBanned(netip.MustParseAddr("203.0.113.7"), at.Add(time.Minute)))
	fmt.Println(s.IsBanned(netip.MustParseAddr("203.0.113.7"), at.Add(2*time.Hour)))
	// Output:
	// true
	// false
}

func TestNameBans(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := open(t, path)
	mustAdd(t, s, Ban{Name: "Griefer", Reason: "griefing", By: "admin", At: t0})
	mustAdd(t, s, Ban{Addr: addrA, At: t0})
	if !s.IsNameBanned("griefer", t0) || !s.IsNameBanned("GRIEFER", t0) || s.IsNameBanned("alice", t0) {
		t.Fatal("name bans match case-insensitively, and only the name")
	}
	if s.IsBanned(addrB, t0) {
		t.Fatal("a name ban refused an address")
	}
	if err := s.Add(Ban{Name: "x", Addr: addrB}); err == nil {
		t.Fatal("a ban of a name and an address at once was accepted")
	}
	if err := s.Add(Ban{}); err == nil {
		t.Fatal("an empty ban was accepted")
	}
	list := s.List()
	if len(list) != 2 || list[0].Addr != addrA || list[1].Name != "Griefer" {
		t.Fatalf("List = %+v: addresses first, then names", list)
	}
	again := open(t, path) // persisted
	if !again.IsNameBanned("griefer", t0) {
		t.Fatal("the name ban did not survive a reopen")
	}
	if ok, err := again.RemoveName("GRIEFER"); !ok || err != nil {
		t.Fatalf("RemoveName: %v %v", ok, err)
	}
	if open(t, path).IsNameBanned("griefer", t0) {
		t.Fatal("the lifted name ban is still on disk")
	}
}

func TestReadsVersion1Files(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	v1 := `{"version": 1, "bans": [{"addr": "203.0.113.7", "at": "2025-01-02T15:04:05Z"}]}`
	if err := os.WriteFile(path, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	if !s.IsBanned(addrA, t0) {
		t.Fatal("a version 1 ban is not applied")
	}
	bad := `{"version": 1, "bans": [{"name": "x", "at": "2025-01-02T15:04:05Z"}]}`
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil {
		t.Fatal("a name ban in a version 1 file was accepted")
	}
}
