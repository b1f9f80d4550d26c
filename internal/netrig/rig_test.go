package netrig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const echoPort = 7000

// probeFrom probes the rig's echo server from client i with a fresh socket
// that the test closes.
func probeFrom(t *testing.T, r *Rig, conn *net.UDPConn, cfg ProbeConfig) *ProbeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Probe(ctx, conn, netip.AddrPortFrom(r.Server.Addr, echoPort), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func clientConn(t *testing.T, r *Rig, i int) *net.UDPConn {
	t.Helper()
	conn, err := r.Client(i).ListenUDP(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func startEcho(t *testing.T, r *Rig) {
	t.Helper()
	if _, err := r.Server.StartEcho(echoPort); err != nil {
		t.Fatal(err)
	}
}

func portIn(ap netip.AddrPort, lo, hi uint16) bool { return ap.Port() >= lo && ap.Port() <= hi }

// TestRigNATRebinding: an echo across the router's masquerade; the server
// sees the client at the router's address, and after Rebind at a new port,
// while another client's mapping stays as it was.
func TestRigNATRebinding(t *testing.T) {
	r := New(t, Config{Clients: 2, NAT: true})
	startEcho(t, r)
	a, b := clientConn(t, r, 0), clientConn(t, r, 1)
	quick := ProbeConfig{Count: 20, Interval: 5 * time.Millisecond, Wait: 500 * time.Millisecond}

	before, other := probeFrom(t, r, a, quick), probeFrom(t, r, b, quick)
	for _, res := range []*ProbeResult{before, other} {
		if res.Echoed != res.Sent {
			t.Fatalf("%d of %d echoes came back on a link without loss", res.Echoed, res.Sent)
		}
	}
	seenA, seenB := before.Seen(), other.Seen()
	if len(seenA) != 1 || seenA[0].Addr() != r.PublicAddr() || !portIn(seenA[0], 10000, 10999) {
		t.Fatalf("server saw client 0 at %v, want %v on a port of 10000-10999", seenA, r.PublicAddr())
	}
	if len(seenB) != 1 || seenB[0].Addr() != r.PublicAddr() {
		t.Fatalf("server saw client 1 at %v", seenB)
	}

	if err := r.Rebind(0); err != nil {
		t.Fatal(err)
	}
	after, otherAfter := probeFrom(t, r, a, quick), probeFrom(t, r, b, quick)
	seen := after.Seen()
	if len(seen) != 1 || seen[0] == seenA[0] || !portIn(seen[0], 11000, 11999) || seen[0].Addr() != r.PublicAddr() {
		t.Fatalf("after Rebind the server saw client 0 at %v, before at %v: want a new port of 11000-11999", seen, seenA[0])
	}
	if after.Echoed != after.Sent {
		t.Errorf("after Rebind %d of %d echoes came back", after.Echoed, after.Sent)
	}
	if s := otherAfter.Seen(); len(s) != 1 || s[0] != seenB[0] {
		t.Errorf("client 1 moved from %v to %v though only client 0 was rebound", seenB[0], s)
	}
	t.Logf("client 0 seen at %v, after Rebind at %v; client 1 at %v", seenA[0], seen[0], seenB[0])
}

// TestRigRebindMidStream rebinds while probes flow: the server sees the
// old port, then the new one, and never the old one again.
func TestRigRebindMidStream(t *testing.T) {
	r := New(t, Config{NAT: true})
	startEcho(t, r)
	conn := clientConn(t, r, 0)
	go func() {
		time.Sleep(300 * time.Millisecond)
		if err := r.Rebind(0); err != nil {
			t.Error(err)
		}
	}()
	res := probeFrom(t, r, conn, ProbeConfig{Count: 100, Interval: 10 * time.Millisecond, Wait: 500 * time.Millisecond})
	seen := res.Seen()
	if len(seen) != 2 || !portIn(seen[0], 10000, 10999) || !portIn(seen[1], 11000, 11999) {
		t.Fatalf("server saw the stream at %v: want one port of 10000-10999, then one of 11000-11999", seen)
	}
	last := -1
	for i, a := range res.SeenAs {
		if res.RTT[i] >= 0 && a == seen[0] {
			last = i
		}
	}
	for i := last + 1; i < res.Sent; i++ {
		if res.RTT[i] >= 0 && res.SeenAs[i] != seen[1] {
			t.Fatalf("probe %d seen at %v after the stream moved to %v", i, res.SeenAs[i], seen[1])
		}
	}
	// Echoes sent to the old mapping while the rebinding happened are
	// dropped by the router, as a home router does; a handful at most.
	if res.Sent-res.Echoed > 5 {
		t.Errorf("%d of %d echoes lost around one rebinding", res.Sent-res.Echoed, res.Sent)
	}
}

// TestRigWithoutNAT: the server sees the client's own address and port.
func TestRigWithoutNAT(t *testing.T) {
	r := New(t, Config{})
	startEcho(t, r)
	conn := clientConn(t, r, 0)
	res := probeFrom(t, r, conn, ProbeConfig{Count: 10, Wait: 500 * time.Millisecond})
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	if seen := res.Seen(); len(seen) != 1 || seen[0] != local || local.Addr() != r.Client(0).Addr {
		t.Fatalf("server saw %v, the client is %v", seen, local)
	}
	if err := r.Rebind(0); !errors.Is(err, ErrNoNAT) {
		t.Fatalf("Rebind without NAT: %v", err)
	}
}

// TestRigOutage: probes sent inside the outage window are lost, and the
// link comes back by itself.
func TestRigOutage(t *testing.T) {
	r := New(t, Config{NAT: true})
	startEcho(t, r)
	conn := clientConn(t, r, 0)
	const cut = 400 * time.Millisecond
	ended := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		ended <- r.Outage(0, cut)
	}()
	// Long enough that the outage falls inside it even if a loaded machine
	// stalls the goroutine above for a second.
	res := probeFrom(t, r, conn, ProbeConfig{Count: 250, Interval: 10 * time.Millisecond, Wait: 500 * time.Millisecond})
	to := <-ended
	from := to.Add(-cut)
	inside, after := 0, 0
	for i, off := range res.SentAt {
		at := res.Start.Add(off)
		switch {
		// Margins: a probe takes a moment to reach the router.
		case at.After(from.Add(20*time.Millisecond)) && at.Before(to.Add(-20*time.Millisecond)):
			inside++
			if res.RTT[i] >= 0 {
				t.Errorf("probe %d sent %v into the outage came back", i, at.Sub(from))
			}
		case at.After(to.Add(50 * time.Millisecond)):
			after++
			if res.RTT[i] < 0 {
				t.Errorf("probe %d sent %v after the outage was lost", i, at.Sub(to))
			}
		}
	}
	t.Logf("outage from %v to %v after the first probe; %d probes inside, %d after; link %+v",
		from.Sub(res.Start), to.Sub(res.Start), inside, after, r.Stats(0))
	if inside < 10 || after < 10 {
		t.Fatalf("%d probes inside the outage and %d after it: the test did not test", inside, after)
	}
	if st := r.Stats(0); st.Up.OutageDrops == 0 {
		t.Errorf("no outage drops counted: %+v", st)
	}
}

// TestRigSetProfile changes a live link: the round trip follows.
func TestRigSetProfile(t *testing.T) {
	r := New(t, Config{NAT: true})
	startEcho(t, r)
	conn := clientConn(t, r, 0)
	quick := ProbeConfig{Count: 10, Interval: 20 * time.Millisecond, Wait: time.Second}
	if s := Summarize(probeFrom(t, r, conn, quick).RTTs()); s.N == 0 || s.Min >= 60*time.Millisecond {
		t.Fatalf("no profile yet, round trips %s", s)
	}
	slow := Profile{Name: "slow", Delay: 60 * time.Millisecond, Rate: 5_000_000}
	if err := r.SetProfile(0, slow); err != nil {
		t.Fatal(err)
	}
	if r.Client(0).Profile() != slow {
		t.Errorf("client 0 reports profile %v", r.Client(0).Profile())
	}
	if s := Summarize(probeFrom(t, r, conn, quick).RTTs()); s.N == 0 || s.Min < 60*time.Millisecond {
		t.Fatalf("with 60 ms added, round trips %s", s)
	}
	if err := r.SetProfile(0, None); err != nil {
		t.Fatal(err)
	}
	if s := Summarize(probeFrom(t, r, conn, quick).RTTs()); s.N == 0 || s.Min >= 60*time.Millisecond {
		t.Fatalf("back to none, round trips %s", s)
	}
	if err := r.SetProfile(0, Profile{Loss: 2}); err == nil {
		t.Error("a loss of 2 was accepted")
	}
}

// TestRigCommandsRunInTheirNamespace: a command sees its node's address,
// and Close kills what is still running and removes every namespace.
func TestRigCommandsRunInTheirNamespace(t *testing.T) {
	r := New(t, Config{Clients: 2})
	for _, n := range []*Node{r.Server, &r.Client(1).Node} {
		out, err := n.Command(context.Background(), "ip", "-4", "-o", "addr", "show", "dev", "eth0").Output()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), " "+n.Addr.String()+"/24 ") {
			t.Errorf("in %s, eth0 is %q, want %v", n.Name, out, n.Addr)
		}
	}
	sleeper, err := r.Client(0).Run("sleep", "600")
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	names := r.namespaces()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a command started in the rig outlived Close")
	}
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(netnsDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s is still there after Close (%v)", name, err)
		}
	}
}

// TestSweepRemovesOnlyDeadRigs: a namespace named for a process that no
// longer runs is swept; one of this live process is not.
func TestSweepRemovesOnlyDeadRigs(t *testing.T) {
	if err := Available(); err != nil {
		New(t, Config{}) // skips or fails with the reason
	}
	own, err := owner()
	if err != nil {
		t.Fatal(err)
	}
	// A pid above any pid_max; this process's pid keeps the name apart
	// from that of a test running at the same time.
	dead := fmt.Sprintf("%s4194304999-%d-1-router", nsPrefix, os.Getpid())
	live := nsPrefix + own + "-999-router"
	for _, n := range []string{dead, live} {
		// Another process's sweep may remove the dead one while ip makes
		// it; make it again.
		var err error
		for try := 0; try < 5 && (try == 0 || err != nil); try++ {
			deleteNamespace(n)
			err = addNamespace(n)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteNamespace(n) })
	}
	removed, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	// Another process's sweep may have been first: what counts is that the
	// dead rig's namespace is gone and the live one is not.
	if _, err := os.Stat(filepath.Join(netnsDir, dead)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead rig's namespace is still there (%v); swept %v", err, removed)
	}
	if _, err := os.Stat(filepath.Join(netnsDir, live)); err != nil {
		t.Errorf("the live rig's namespace went: %v", err)
	}
}

// TestRigDuplicatesAndReorders: a profile's duplication and reordering
// reach the end points as duplicated and late echoes.
func TestRigDuplicatesAndReorders(t *testing.T) {
	p := Profile{Name: "messy", Delay: 20 * time.Millisecond, Duplicate: 0.05, Reorder: 0.05}
	r := New(t, Config{Profile: p, NAT: true})
	startEcho(t, r)
	res := probeFrom(t, r, clientConn(t, r, 0), ProbeConfig{Count: 1000, Interval: 2 * time.Millisecond})
	st := r.Stats(0)
	t.Logf("%d echoed, %d duplicated, %d reordered; forwarder up %+v down %+v", res.Echoed, res.Duplicates, res.Reordered, st.Up, st.Down)
	// Either direction may do it: about 1 − 0.95² ≈ 9.75 % of echoes.
	for name, n := range map[string]int{"duplicated": res.Duplicates, "reordered": res.Reordered} {
		if got := float64(n) / float64(res.Echoed); got < 0.06 || got > 0.14 {
			t.Errorf("%.1f%% of echoes %s, want about 9.75%%", 100*got, name)
		}
	}
	if res.Echoed != res.Sent {
		t.Errorf("%d of %d echoes came back on a link without loss", res.Echoed, res.Sent)
	}
}
