package discovery

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/policy"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
)

// Every test here sends only to 127.0.0.0/8, and every read has a deadline.

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func startResponder(t *testing.T, cfg ResponderConfig) *Responder {
	t.Helper()
	if cfg.Info == nil {
		cfg.Info = func() Info { return testInfo }
	}
	cfg.Logger = quiet
	r, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// loopbackClient is a raw UDP socket on 127.0.0.1 for hand-made datagrams.
func loopbackClient(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readAnswer reads one datagram within d; ok is false on timeout.
func readAnswer(t *testing.T, c *net.UDPConn, d time.Duration) (Nonce, Info, bool) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 512)
	n, _, err := c.ReadFromUDPAddrPort(buf)
	if isTimeout(err) {
		return Nonce{}, Info{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	nonce, info, err := ParseAnswer(buf[:n])
	if err != nil {
		t.Fatalf("responder sent a bad answer %x: %v", buf[:n], err)
	}
	return nonce, info, true
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// waitStats polls until done(stats) or 5 s pass.
func waitStats(t *testing.T, r *Responder, done func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := r.Stats()
		if done(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("responder stats stuck at %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDiscoverRoundTrip(t *testing.T) {
	r := startResponder(t, ResponderConfig{Bind: "127.0.0.1"})
	res, err := Query(context.Background(), []netip.AddrPort{r.Addr()}, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].From != r.Addr() || res[0].Info != testInfo || res[0].RTT <= 0 {
		t.Fatalf("Query = %+v; want one answer from %s with %+v", res, r.Addr(), testInfo)
	}
	if s := r.Stats(); s.Answered != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestDiscoverTwoResponders(t *testing.T) {
	probe, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.2:0")))
	if err != nil {
		t.Skipf("cannot bind 127.0.0.2: %v", err)
	}
	probe.Close()
	a := startResponder(t, ResponderConfig{Bind: "127.0.0.1", Info: func() Info {
		i := testInfo
		i.Name, i.GamePort = "Zulu", 27015
		return i
	}})
	b := startResponder(t, ResponderConfig{Bind: "127.0.0.2", Info: func() Info {
		i := testInfo
		i.Name, i.GamePort = "Alpha", 27020
		return i
	}})
	// b twice: a target named twice is asked once and answered once.
	res, err := Query(context.Background(), []netip.AddrPort{a.Addr(), b.Addr(), b.Addr()}, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Info.Name != "Alpha" || res[0].From != b.Addr() ||
		res[1].Info.Name != "Zulu" || res[1].From != a.Addr() {
		t.Fatalf("Query = %+v; want Alpha from %s then Zulu from %s", res, b.Addr(), a.Addr())
	}
	if s := b.Stats(); s.Answered != 1 {
		t.Fatalf("b answered %d queries, want 1", s.Answered)
	}
}

// Malformed datagrams get no answer. They are sent first, then one good
// query: loopback keeps the order of one socket's datagrams and the
// responder reads them in turn, so the first answer must be the good one's.
func TestDiscoverMalformedDropped(t *testing.T) {
	r := startResponder(t, ResponderConfig{})
	c := loopbackClient(t)
	valid := AppendQuery(nil, testNonce)
	wrongMagic := bytes.Clone(valid)
	wrongMagic[0] = 'X'
	wrongVersion := bytes.Clone(valid)
	wrongVersion[4] = 2
	dirtyPad := bytes.Clone(valid)
	dirtyPad[40] = 7
	answerAsQuery, _ := AppendAnswer(nil, testNonce, testInfo)
	bad := [][]byte{
		valid[:QuerySize-1],           // truncated
		valid[:5],                     // header fragment
		wrongMagic,                    // wrong magic
		wrongVersion,                  // wrong version
		append(bytes.Clone(valid), 0), // one byte oversized
		append(bytes.Clone(valid), make([]byte, 1000)...), // far oversized
		dirtyPad,      // padding not zero
		answerAsQuery, // an answer is never answered
	}
	for _, b := range bad {
		if _, err := c.WriteToUDPAddrPort(b, r.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	good := Nonce{9, 9, 9}
	c.WriteToUDPAddrPort(AppendQuery(nil, good), r.Addr())
	nonce, _, ok := readAnswer(t, c, 2*time.Second)
	if !ok || nonce != good {
		t.Fatalf("first answer: nonce %x, ok %v; want %x", nonce, ok, good)
	}
	if _, _, ok := readAnswer(t, c, 100*time.Millisecond); ok {
		t.Fatal("a malformed query was answered")
	}
	if s := r.Stats(); s.Malformed != uint64(len(bad)) || s.Answered != 1 {
		t.Fatalf("stats %+v; want %d malformed, 1 answered", s, len(bad))
	}
}

// A fake responder answers first with a wrong nonce, then with the right one;
// Query keeps only the second.
func TestDiscoverNonceMismatchIgnored(t *testing.T) {
	fake := loopbackClient(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fake.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 128)
		n, from, err := fake.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		nonce, err := ParseQuery(buf[:n])
		if err != nil {
			return
		}
		forgedNonce := nonce
		forgedNonce[0] ^= 1
		forged := testInfo
		forged.Name = "forged"
		ans, _ := AppendAnswer(nil, forgedNonce, forged)
		fake.WriteToUDPAddrPort(ans, from)
		genuine := testInfo
		genuine.Name = "real"
		ans, _ = AppendAnswer(nil, nonce, genuine)
		fake.WriteToUDPAddrPort(ans, from)
	}()
	res, err := Query(context.Background(), []netip.AddrPort{fake.LocalAddr().(*net.UDPAddr).AddrPort()}, 500*time.Millisecond)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Info.Name != "real" {
		t.Fatalf("Query = %+v; want only the answer with the right nonce", res)
	}
}

func TestDiscoverPolicy(t *testing.T) {
	r := startResponder(t, ResponderConfig{Bind: "127.0.0.1"})
	if got := r.Addr().Addr(); got != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("bound to %s", got)
	}
	res, err := Query(context.Background(), []netip.AddrPort{r.Addr()}, 500*time.Millisecond)
	if err != nil || len(res) != 1 {
		t.Fatalf("loopback query: %+v, %v", res, err)
	}
	// Sources the loopback policy refuses, checked without any network.
	q := AppendQuery(nil, testNonce)
	for _, src := range []string{"10.0.0.1:5000", "192.168.1.7:5000", "8.8.8.8:53", "127.255.255.255:5000", "127.0.0.0:5000", "127.0.0.1:0"} {
		if a := r.answer(nil, q, netip.MustParseAddrPort(src), time.Now()); a != nil {
			t.Errorf("answered a query from %s", src)
		}
	}
	if s := r.Stats(); s.PolicyDropped != 6 {
		t.Fatalf("stats %+v; want 6 policy drops", s)
	}
	// A LAN responder refuses loopback and foreign subnets (no socket opened).
	lan, err := newResponder(ResponderConfig{Bind: "192.168.1.20/24", Info: func() Info { return testInfo }})
	if err != nil {
		t.Fatal(err)
	}
	for src, want := range map[string]bool{"192.168.1.7:5000": true, "192.168.1.255:5000": false, "127.0.0.1:5000": false, "192.168.2.7:5000": false} {
		if got := lan.answer(nil, q, netip.MustParseAddrPort(src), time.Now()) != nil; got != want {
			t.Errorf("LAN responder answers %s: %v, want %v", src, got, want)
		}
	}
}

func TestDiscoverBudget(t *testing.T) {
	cases := []struct {
		name   string
		budget ratelimit.Config
	}{
		{"default", ratelimit.Config{}},
		{"burst 5", ratelimit.Config{Burst: 5, RefillPerSecond: 0.001}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := startResponder(t, ResponderConfig{Budget: tc.budget})
			burst := cmpOr(tc.budget.Burst, ratelimit.DefaultBurst)
			refill := cmpOr(tc.budget.RefillPerSecond, ratelimit.DefaultRefillPerSecond)
			c := loopbackClient(t)
			start := time.Now()
			for i := range 40 {
				c.WriteToUDPAddrPort(AppendQuery(nil, Nonce{byte(i)}), r.Addr())
			}
			s := waitStats(t, r, func(s Stats) bool { return s.Answered+s.RateLimited+s.SendFailed >= 40 })
			limit := uint64(burst) + uint64(time.Since(start).Seconds()*refill)
			if s.Answered < uint64(burst) || s.Answered > limit {
				t.Fatalf("40 queries: %d answered, want %d..%d (%+v)", s.Answered, burst, limit, s)
			}
			got := 0
			for got < 40 {
				if _, _, ok := readAnswer(t, c, 200*time.Millisecond); !ok {
					break
				}
				got++
			}
			if uint64(got) != s.Answered {
				t.Fatalf("received %d answers, responder counted %d", got, s.Answered)
			}
		})
	}
}

func cmpOr[T int | float64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func TestDiscoverInfoFailures(t *testing.T) {
	calls := 0
	r := startResponder(t, ResponderConfig{Info: func() Info {
		calls++
		if calls == 1 {
			panic("host bug")
		}
		if calls == 2 {
			return Info{Name: "no port"}
		}
		return testInfo
	}})
	c := loopbackClient(t)
	for i := range 3 {
		c.WriteToUDPAddrPort(AppendQuery(nil, Nonce{byte(i)}), r.Addr())
	}
	nonce, _, ok := readAnswer(t, c, 2*time.Second)
	if !ok || nonce != (Nonce{2}) {
		t.Fatalf("answer %x, %v; want the third query's", nonce, ok)
	}
	if s := r.Stats(); s.InfoFailed != 2 || s.Answered != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestListenRefusesBadConfig(t *testing.T) {
	info := func() Info { return testInfo }
	cases := []struct {
		name string
		cfg  ResponderConfig
		want error
	}{
		{"wildcard", ResponderConfig{Bind: "0.0.0.0", Info: info}, policy.ErrWildcard},
		{"public", ResponderConfig{Bind: "8.8.8.8", Info: info}, policy.ErrPublic},
		{"no info", ResponderConfig{}, ErrConfig},
		{"port", ResponderConfig{Port: 70000, Info: info}, ErrConfig},
		{"budget", ResponderConfig{Info: info, Budget: ratelimit.Config{Burst: -1}}, ratelimit.ErrConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if r, err := Listen(tc.cfg); !errors.Is(err, tc.want) {
				if r != nil {
					r.Close()
				}
				t.Fatalf("Listen = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestAnswerPathDoesNotAllocate(t *testing.T) {
	r, err := newResponder(ResponderConfig{Info: func() Info { return testInfo }, Budget: ratelimit.Config{Burst: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	q := AppendQuery(nil, testNonce)
	bad := q[:10]
	from := netip.MustParseAddrPort("127.0.0.1:40000")
	foreign := netip.MustParseAddrPort("10.0.0.1:40000")
	dst := make([]byte, 0, MaxAnswerSize)
	now := time.Now()
	allocs := testing.AllocsPerRun(1000, func() {
		r.answer(dst[:0], q, from, now)
		r.answer(dst[:0], bad, from, now)
		r.answer(dst[:0], q, foreign, now)
	})
	if allocs != 0 {
		t.Fatalf("answer path allocates %v times per run", allocs)
	}
}

func TestResponderCloseTwice(t *testing.T) {
	r, err := Listen(ResponderConfig{Info: func() Info { return testInfo }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}
