package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// TestDatagramMaxGarbage: finding a session's datagram size allocates
// little: the probe is shared, and only HTTP/3's copy of it is garbage
// (16 KiB), not a fresh 64 KiB probe and its copy for every session.
func TestDatagramMaxGarbage(t *testing.T) {
	srv, err := New(Config{Hub: NewHub(netip.AddrPort{}, true), Bind: netip.MustParseAddr("127.0.0.1"),
		WebTransport: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve()
	t.Cleanup(func() { srv.Close() })
	var hashes [][32]byte
	for _, h := range srv.CertHashes() {
		hashes = append(hashes, h.SHA256)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := DialWebTransport(ctx, fmt.Sprintf("https://127.0.0.1:%d%s", srv.Port(), PathWebTransport), ClientOptions{CertHashes: hashes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.mu.RLock()
	lk := c.peers[c.peer].lk.(*wtLink)
	c.mu.RUnlock()

	const calls = 8
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		if _, err := datagramMax(lk.sess); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// What the session's other goroutines allocate meanwhile (acks,
	// timers) is small beside a probe; the bound is far below the 128 KiB
	// a call allocated with a fresh 64 KiB probe.
	const most = 40 << 10
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > most {
		t.Fatalf("datagramMax allocates %d bytes a call; want at most %d", per, most)
	}
}
