// Package bans is the server's persistent ban list, kept in FileName in the
// data directory: addresses refused at Connect, and player names refused at
// admission (so that banning one player does not ban everyone behind the
// same address).
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
//	{"version": 2, "bans": [
//	  {"addr": "203.0.113.7", "reason": "spam", "by": "admin",
//	   "at": "2025-01-02T15:04:05Z", "until": "2025-01-03T15:04:05Z"},
//	  {"name": "griefer", "by": "admin", "at": "2025-01-02T15:04:05Z"}
//	]}
//
// Each ban has "addr" or "name" (names match case-insensitively); "until" is
// absent for a permanent ban; "reason" and "by" may be absent. Version 1
// files (addresses only) are read as they are and rewritten as version 2 at
// the next change. Unknown fields, duplicate bans and other versions are
// refused when the file is opened, with what to do.
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/internal/atomicfile"
)

// FileName is the ban list's file name inside the data directory.
const FileName = "bans.json"

// fileVersion is the version of the file format this package reads and writes.
const fileVersion = 2

// ErrCorrupt is wrapped by Open when the file cannot be read as a ban list.
var ErrCorrupt = errors.New("bans: ban list file is damaged")

// Ban refuses one address or one player name.
type Ban struct {
	// Addr is the banned address. IPv4-mapped IPv6 addresses are stored
	// and matched as IPv4, and zones are dropped, so one ban covers every
	// spelling of an address. Invalid for a name ban.
	Addr netip.Addr
	// Name is the banned player name (matched case-insensitively); empty
	// for an address ban.
	Name   string
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
	mu   sync.Mutex          // serialises writers
	snap atomic.Pointer[set] // never mutated once published
}

// set is one published state of the list.
type set struct {
	addrs map[netip.Addr]Ban
	names map[string]Ban // by nameKey
}

func newSet() set { return set{addrs: make(map[netip.Addr]Ban), names: make(map[string]Ban)} }

// nameKey folds a name for matching.
func nameKey(name string) string { return strings.ToLower(name) }

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
	b, ok := s.snap.Load().addrs[canonical(addr)]
	return ok && b.Active(now)
}

// IsNameBanned reports whether a player name is refused at now.
func (s *Store) IsNameBanned(name string, now time.Time) bool {
	b, ok := s.snap.Load().names[nameKey(name)]
	return ok && b.Active(now)
}

// Lookup returns the ban of addr, active or expired.
func (s *Store) Lookup(addr netip.Addr) (Ban, bool) {
	b, ok := s.snap.Load().addrs[canonical(addr)]
	return b, ok
}

// List returns every ban, expired ones included: addresses in order, then
// names in order.
func (s *Store) List() []Ban {
	cur := s.snap.Load()
	list := make([]Ban, 0, len(cur.addrs)+len(cur.names))
	for _, b := range cur.addrs {
		list = append(list, b)
	}
	for _, b := range cur.names {
		list = append(list, b)
	}
	slices.SortFunc(list, compareBans)
	return list
}

func compareBans(a, b Ban) int {
	if (a.Name == "") != (b.Name == "") {
		if a.Name == "" {
			return -1 // addresses first
		}
		return 1
	}
	if a.Name != "" {
		return cmp.Compare(nameKey(a.Name), nameKey(b.Name))
	}
	return a.Addr.Compare(b.Addr)
}

// Add bans b.Addr or b.Name (exactly one), replacing any ban of the same,
// and drops the bans that had expired by b.At. The change is on disk when
// Add returns nil; on an error nothing changed, in memory or on disk.
func (s *Store) Add(b Ban) error {
	switch {
	case b.Addr.IsValid() == (b.Name != ""):
		return errors.New("bans: a ban names one address or one player name")
	case b.Addr.IsValid():
		b.Addr = canonical(b.Addr)
	}
	if b.At.IsZero() {
		b.At = time.Now()
	}
	if !b.Until.IsZero() && !b.Until.After(b.At) {
		return fmt.Errorf("bans: ban of %s ends (%s) before it starts (%s)", b.target(), b.Until.Format(time.RFC3339), b.At.Format(time.RFC3339))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.copyLocked(func(ob Ban) bool { return ob.Active(b.At) })
	if b.Name != "" {
		next.names[nameKey(b.Name)] = b
	} else {
		next.addrs[b.Addr] = b
	}
	return s.commit(next)
}

// target is what a ban refuses, as text.
func (b Ban) target() string {
	if b.Name != "" {
		return "name " + b.Name
	}
	return b.Addr.String()
}

// Remove lifts the ban of addr, expired or not; removed is false if there
// was none.
func (s *Store) Remove(addr netip.Addr) (removed bool, err error) {
	addr = canonical(addr)
	return s.remove(func(b Ban) bool { return b.Name == "" && b.Addr == addr })
}

// RemoveName lifts the ban of a player name.
func (s *Store) RemoveName(name string) (removed bool, err error) {
	key := nameKey(name)
	return s.remove(func(b Ban) bool { return b.Name != "" && nameKey(b.Name) == key })
}

func (s *Store) remove(match func(Ban) bool) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	next := s.copyLocked(func(b Ban) bool {
		if match(b) {
			found = true
			return false
		}
		return true
	})
	if !found {
		return false, nil
	}
	if err := s.commit(next); err != nil {
		return false, err
	}
	return true, nil
}

// copyLocked copies the current list, keeping the bans keep accepts.
func (s *Store) copyLocked(keep func(Ban) bool) set {
	cur, next := s.snap.Load(), newSet()
	for a, b := range cur.addrs {
		if keep(b) {
			next.addrs[a] = b
		}
	}
	for k, b := range cur.names {
		if keep(b) {
			next.names[k] = b
		}
	}
	return next
}

// commit writes next to disk, then publishes it. s.mu must be held.
func (s *Store) commit(next set) error {
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
	Addr   string    `json:"addr,omitempty"`
	Name   string    `json:"name,omitempty"`
	Reason string    `json:"reason,omitempty"`
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at"`
	Until  time.Time `json:"until,omitzero"`
}

func encode(m set) ([]byte, error) {
	f := fileList{Version: fileVersion, Bans: make([]fileBan, 0, len(m.addrs)+len(m.names))}
	list := make([]Ban, 0, len(m.addrs)+len(m.names))
	for _, b := range m.addrs {
		list = append(list, b)
	}
	for _, b := range m.names {
		list = append(list, b)
	}
	slices.SortFunc(list, compareBans)
	for _, b := range list {
		fb := fileBan{Name: b.Name, Reason: b.Reason, By: b.By, At: b.At, Until: b.Until}
		if b.Name == "" {
			fb.Addr = b.Addr.String()
		}
		f.Bans = append(f.Bans, fb)
	}
	raw, err := json.MarshalIndent(f, "", "  ")
	return append(raw, '\n'), err
}

func decode(raw []byte) (set, error) {
	m := newSet()
	if len(bytes.TrimSpace(raw)) == 0 {
		return m, nil // missing, or emptied by the operator
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var f fileList
	if err := dec.Decode(&f); err != nil {
		return set{}, fmt.Errorf("not a ban list: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return set{}, errors.New("not a ban list: data after the JSON object")
	}
	if f.Version != 1 && f.Version != fileVersion {
		return set{}, fmt.Errorf("version %d, but this sparkhost reads versions 1 and %d (a newer sparkhost may have written it)", f.Version, fileVersion)
	}
	for i, fb := range f.Bans {
		b := Ban{Name: fb.Name, Reason: fb.Reason, By: fb.By, At: fb.At, Until: fb.Until}
		switch {
		case fb.Name != "" && (fb.Addr != "" || f.Version == 1):
			return set{}, fmt.Errorf("ban %d: give an address or a name, not both", i+1)
		case fb.Name != "":
			key := nameKey(fb.Name)
			if _, dup := m.names[key]; dup {
				return set{}, fmt.Errorf("ban %d: name %s is banned twice", i+1, fb.Name)
			}
			m.names[key] = b
			continue
		}
		addr, err := netip.ParseAddr(fb.Addr)
		if err != nil {
			return set{}, fmt.Errorf("ban %d: address %q: %v", i+1, fb.Addr, err)
		}
		b.Addr = canonical(addr)
		if _, dup := m.addrs[b.Addr]; dup {
			return set{}, fmt.Errorf("ban %d: %s is banned twice", i+1, b.Addr)
		}
		m.addrs[b.Addr] = b
	}
	return m, nil
}
