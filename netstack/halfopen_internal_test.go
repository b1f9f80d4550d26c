package netstack

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

var hoT0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func hoEntry(addr string, at time.Duration) *halfOpen {
	return &halfOpen{addr: netip.MustParseAddrPort(addr), created: hoT0.Add(at)}
}

func TestHalfOpenCaps(t *testing.T) {
	var ctr Counters
	tab := newHalfOpenTable(HalfOpenConfig{Max: 100, PerAddress: 2, PerPrefix: 3}, 5*time.Second, &ctr)
	tab.insert(hoEntry("10.0.0.1:1", 0))
	tab.insert(hoEntry("10.0.0.1:2", 0))
	if tab.admits(netip.MustParseAddrPort("10.0.0.1:3")) {
		t.Fatal("a third handshake of one address admitted with PerAddress 2")
	}
	if !tab.admits(netip.MustParseAddrPort("10.0.0.1:2")) {
		t.Fatal("a new hello from an endpoint that has an entry replaces it: it must be admitted")
	}
	tab.insert(hoEntry("10.0.0.2:1", 0))
	if tab.admits(netip.MustParseAddrPort("10.0.0.3:1")) {
		t.Fatal("a fourth handshake of one /24 admitted with PerPrefix 3")
	}
	if !tab.admits(netip.MustParseAddrPort("10.0.1.1:1")) {
		t.Fatal("another /24 refused")
	}
	// IPv6: the prefix is the /64.
	tab.insert(hoEntry("[2001:db8::1]:1", 0))
	tab.insert(hoEntry("[2001:db8::2]:1", 0))
	tab.insert(hoEntry("[2001:db8::3]:1", 0))
	if tab.admits(netip.MustParseAddrPort("[2001:db8::ffff]:1")) {
		t.Fatal("a fourth handshake of one /64 admitted")
	}
	if !tab.admits(netip.MustParseAddrPort("[2001:db8:0:1::1]:1")) {
		t.Fatal("another /64 refused")
	}
	if got := ctr.HalfOpen.Load(); got != 6 || tab.len() != 6 {
		t.Fatalf("gauge %d, len %d, want 6", got, tab.len())
	}
}

// A full table evicts the oldest entry of the most represented prefix, so a
// source from any other prefix always gets in.
func TestHalfOpenFullTableEvictsFromTheBiggestPrefix(t *testing.T) {
	var ctr Counters
	tab := newHalfOpenTable(HalfOpenConfig{Max: 8, PerAddress: 8, PerPrefix: 8}, time.Minute, &ctr)
	for i := range 6 { // the flood: one /24
		tab.insert(hoEntry(fmt.Sprintf("10.9.9.%d:1", i+1), time.Duration(i)*time.Millisecond))
	}
	tab.insert(hoEntry("10.1.1.1:1", 10*time.Millisecond)) // two real clients
	tab.insert(hoEntry("10.2.2.2:1", 11*time.Millisecond))
	for i := range 20 { // 20 more from the flood and from new clients
		tab.insert(hoEntry(fmt.Sprintf("10.9.8.%d:1", i+1), time.Duration(20+i)*time.Millisecond))
		if tab.lookup(netip.MustParseAddrPort("10.1.1.1:1")) == nil || tab.lookup(netip.MustParseAddrPort("10.2.2.2:1")) == nil {
			t.Fatalf("after %d flood entries a real client was evicted", i+1)
		}
	}
	if tab.len() != 8 {
		t.Fatalf("len %d, want the cap 8", tab.len())
	}
	if ctr.HalfOpenEvicted.Load() != 20 {
		t.Fatalf("evicted %d, want 20", ctr.HalfOpenEvicted.Load())
	}
}

func TestHalfOpenExpiry(t *testing.T) {
	var ctr Counters
	tab := newHalfOpenTable(HalfOpenConfig{}, 5*time.Second, &ctr)
	a, b, c := hoEntry("10.0.0.1:1", 0), hoEntry("10.0.0.2:1", time.Second), hoEntry("10.0.0.3:1", 2*time.Second)
	tab.insert(a)
	tab.insert(b)
	tab.insert(c)
	tab.remove(b) // finished: leaves a dead slot in the FIFO
	tab.expire(hoT0.Add(5*time.Second - 1))
	if tab.len() != 2 {
		t.Fatalf("expired early: len %d", tab.len())
	}
	tab.expire(hoT0.Add(5 * time.Second))
	if tab.lookup(a.addr) != nil || tab.lookup(c.addr) == nil {
		t.Fatal("expiry removed the wrong entry")
	}
	tab.expire(hoT0.Add(7 * time.Second))
	if tab.len() != 0 || len(tab.fifo) != 0 || ctr.HalfOpen.Load() != 0 {
		t.Fatalf("len %d fifo %d gauge %d after every entry expired", tab.len(), len(tab.fifo), ctr.HalfOpen.Load())
	}
	if tab.remove(c) {
		t.Fatal("removing an expired entry reported success")
	}
}
