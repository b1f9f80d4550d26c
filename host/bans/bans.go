// Package bans is the server's persistent ban list: addresses refused at
// Connect, kept in FileName in the data directory.
//
// The list is read far more often than written: IsBanned runs on a network
// goroutine for every Connect, so it reads an immutable map snapshot through
// an atomic pointer, without a lock or an allocation. Writers (admin
// commands, rare) serialise on a mutex, write the whole file atomically and
// only then publish the new snapshot, so what IsBanned sees is always what
// is on disk. This package never decides who to ban and never disconnects
// anyone; the host does.
//
// # File format
//
// JSON, versioned:
//
//	{"version": 1, "bans": [
//	  {"addr": "203.0.113.7", "reason": "spam", "by": "admin",
//	   "at": "2025-01-02T15:04:05Z", "until": "2025-01-03T15:04:05Z"}
//	]}
//
// "until" is absent for a permanent ban; "reason" and "by" may be absent.
// Unknown fields, duplicate addresses and other versions are refused when
// the file is opened, with what to do.
package bans

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/internal/atomicfile"
)

// FileName is the ban list's file name inside the data directory.
const FileName = "bans.json"

// fileVersion is the version of the file format this package reads and writes.
const fileVersion = 1

// ErrCorrupt is wrapped by Open when the file cannot be read as a ban list.
var ErrCorrupt = errors.New("bans: ban list file is damaged")

// Ban refuses one address.
type Ban struct {
	// Addr is the banned address. IPv4-mapped IPv6 addresses are stored
	// and matched as IPv4, and zones are dropped, so one ban covers every
	// spelling of an address.
	Addr   netip.Addr
	Reason string    // shown to the operator; may be empty
	By     string    // who banned: "admin", a module name
	At     time.Time // when the ban was made; zero means now (at Add)
	Until  time.Time // when it ends; zero = permanent
}

// Permanent reports whether the ban never ends.
func (b Ban) Permanent() bool { return b.Until.IsZero() }

// Active reports whether the ban refuses its address at now.
func (b Ban) Active(now time.Time) bool { return b.Until.IsZero() || now.Before(b.Until) }

// Store is the ban list, loaded in memory and persisted on every change. It
// is safe for concurrent use.
type Store struct {
	path string
	mu   sync.Mutex                         // serialises writers
	snap atomic.Pointer[map[netip.Addr]Ban] // never mutated once published
}

// Open loads the ban list at path. A missing or empty file is an empty list
// (the file is written at the first change); a damaged one is an error wrapping
// ErrCorrupt that names the file and the fix.
func Open(path string) (*Store, error) {
	s := &Store{path: path}
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("bans: reading %s: %w", path, err)
	}
	m, err := decode(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v; fix it, or move it away to start with no bans", ErrCorrupt, path, err)
	}
	s.snap.Store(&m)
	return s, nil
}

// Path returns the file the list is kept in.
func (s *Store) Path() string { return s.path }

// IsBanned reports whether addr is refused at now (an expired ban does not
// count). It takes no lock and allocates nothing.
func (s *Store) IsBanned(addr netip.Addr, now time.Time) bool {
	b, ok := (*s.snap.Load())[canonical(addr)]
	return ok && b.Active(now)
}

// Lookup returns the ban of addr, active or expired.
func (s *Store) Lookup(addr netip.Addr) (Ban, bool) {
	b, ok := (*s.snap.Load())[canonical(addr)]
	return b, ok
}

// List returns every ban, expired ones included, sorted by address.
func (s *Store) List() []Ban {
	m := *s.snap.Load()
	list := make([]Ban, 0, len(m))
	for _, b := range m {
		list = append(list, b)
	}
	slices.SortFunc(list, func(a, b Ban) int { return a.Addr.Compare(b.Addr) })
	return list
}

// Add bans b.Addr, replacing any ban of that address, and drops the bans
// that had expired by b.At. The change is on disk when Add returns nil; on
// an error nothing changed, in memory or on disk.
func (s *Store) Add(b Ban) error {
	if !b.Addr.IsValid() {
		return errors.New("bans: no address to ban")
	}
	b.Addr = canonical(b.Addr)
	if b.At.IsZero() {
		b.At = time.Now()
	}
	if !b.Until.IsZero() && !b.Until.After(b.At) {
		return fmt.Errorf("bans: ban of %s ends (%s) before it starts (%s)", b.Addr, b.Until.Format(time.RFC3339), b.At.Format(time.RFC3339))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.snap.Load()
	next := make(map[netip.Addr]Ban, len(old)+1)
	for a, ob := range old {
		if ob.Active(b.At) {
			next[a] = ob
		}
	}
	next[b.Addr] = b
	return s.commit(next)
}

// Remove lifts the ban of addr, expired or not; removed is false if there
// was none.
func (s *Store) Remove(addr netip.Addr) (removed bool, err error) {
	addr = canonical(addr)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.snap.Load()
	if _, ok := old[addr]; !ok {
		return false, nil
	}
	next := make(map[netip.Addr]Ban, len(old))
	for a, b := range old {
		if a != addr {
			next[a] = b
		}
	}
	if err := s.commit(next); err != nil {
		return false, err
	}
	return true, nil
}

// commit writes next to disk, then publishes it. s.mu must be held.
func (s *Store) commit(next map[netip.Addr]Ban) error {
	raw, err := encode(next)
	if err == nil {
		err = atomicfile.WriteFile(s.path, raw)
	}
	if err != nil {
		return fmt.Errorf("bans: saving %s: %w; the ban list is unchanged", s.path, err)
	}
	s.snap.Store(&next)
	return nil
}

func canonical(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

type fileList struct {
	Version int       `json:"version"`
	Bans    []fileBan `json:"bans"`
}

type fileBan struct {
	Addr   string    `json:"addr"`
	Reason string    `json:"reason,omitempty"`
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at"`
	Until  time.Time `json:"until,omitzero"`
}

func encode(m map[netip.Addr]Ban) ([]byte, error) {
	f := fileList{Version: fileVersion, Bans: make([]fileBan, 0, len(m))}
	for _, b := range m {
		f.Bans = append(f.Bans, fileBan{Addr: b.Addr.String(), Reason: b.Reason, By: b.By, At: b.At, Until: b.Until})
	}
	slices.SortFunc(f.Bans, func(a, b fileBan) int { return cmp.Compare(a.Addr, b.Addr) })
	raw, err := json.MarshalIndent(f, "", "  ")
	return append(raw, '\n'), err
}

func decode(raw []byte) (map[netip.Addr]Ban, error) {
	m := make(map[netip.Addr]Ban)
	if len(bytes.TrimSpace(raw)) == 0 {
		return m, nil // missing, or emptied by the operator
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var f fileList
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a ban list: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a ban list: data after the JSON object")
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("version %d, but this sparkhost reads version %d (a newer sparkhost may have written it)", f.Version, fileVersion)
	}
	for i, fb := range f.Bans {
		addr, err := netip.ParseAddr(fb.Addr)
		if err != nil {
			return nil, fmt.Errorf("ban %d: address %q: %v", i+1, fb.Addr, err)
		}
		addr = canonical(addr)
		if _, dup := m[addr]; dup {
			return nil, fmt.Errorf("ban %d: %s is banned twice", i+1, addr)
		}
		m[addr] = Ban{Addr: addr, Reason: fb.Reason, By: fb.By, At: fb.At, Until: fb.Until}
	}
	return m, nil
}
