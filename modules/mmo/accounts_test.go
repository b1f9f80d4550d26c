package mmo_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoclient"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/scram"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// writeModuleConfig writes the module's config.toml in dataDir.
func writeModuleConfig(t testing.TB, dataDir, body string) {
	t.Helper()
	mdir := filepath.Join(dataDir, "modules", "mmo")
	must(t, os.MkdirAll(mdir, 0o700))
	must(t, os.WriteFile(filepath.Join(mdir, "config.toml"), []byte(body), 0o600))
}

// dialFrom connects a player whose datagrams come from the loopback
// address from (127.0.0.2, …: another client address for the server).
func dialFrom(t testing.TB, srv *server, from, name string) *player {
	t.Helper()
	uc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(from), 0)))
	must(t, err)
	t.Cleanup(func() { uc.Close() })
	return dialWith(t, netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin(), Conn: uc})
}

// metric returns the module's metric name, as the server last published
// it (Snapshot: safe off the game thread, as the metrics endpoint reads it).
func metric(srv *server, name string) float64 {
	for _, st := range srv.Snapshot().Modules {
		if st.Name != "mmo" {
			continue
		}
		for _, m := range st.Metrics {
			if m.Name == name {
				return m.Value
			}
		}
	}
	return -1
}

func waitMetric(t testing.TB, srv *server, name string, want float64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if metric(srv, name) == want {
			return
		}
	}
	t.Fatalf("metric %s = %v, want %v", name, metric(srv, name), want)
}

// errDetail returns the detail of a Result error.
func errDetail(err error) string {
	var e *mmoproto.Error
	if errors.As(err, &e) {
		return e.Detail
	}
	return ""
}

// TestBanHoldsAcrossRestart: mmo_ban ends the account's login and refuses
// its logins AccountBanned with the reason; after the server is stopped and
// started again on the same data directory the ban holds; mmo_unban lifts it.
func TestBanHoldsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir, nil)
	a := dial(t, srv, "alice")
	_, err := a.s.Register(bg, "alice", "pw-alice")
	must(t, err)
	_, err = a.s.Register(bg, "bob", "pw-bob")
	must(t, err)
	_, err = a.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	must(t, a.s.Create(bg, "Alice"))
	_, err = a.s.Enter(bg, "Alice")
	must(t, err)

	if _, err := srv.Exec("mmo_ban nobody"); err == nil {
		t.Fatal("mmo_ban of an unknown account succeeded")
	}
	if _, err := srv.Exec("mmo_ban"); err == nil {
		t.Fatal("mmo_ban without an account succeeded")
	}
	out, err := srv.Exec("mmo_ban Alice spamming the greeting channel")
	if err != nil || out != "banned alice (its login was ended)" {
		t.Fatalf("mmo_ban: %q %v", out, err)
	}
	a.waitEvent(t, "mmo logged out: Banned (an administrator banned your account: banned since ")
	if _, err := a.s.Where(bg); code(err) != mmoproto.NotLoggedIn {
		t.Fatalf("the banned session still plays: %v", err)
	}
	_, err = a.s.Login(bg, "alice", "pw-alice")
	if code(err) != mmoproto.AccountBanned || !strings.Contains(errDetail(err), "spamming the greeting channel") {
		t.Fatalf("banned login: %v", err)
	}
	// The wrong password of a banned account is just AuthFailed: only the
	// password's holder learns of the ban.
	if _, err := a.s.Login(bg, "alice", "wrong"); code(err) != mmoproto.AuthFailed {
		t.Fatalf("wrong password of a banned account: %v", err)
	}
	waitMetric(t, srv, "banned_logins_total", 1)
	out, err = srv.Exec("mmo_bans")
	if err != nil || !strings.HasPrefix(out, "banned accounts 1\n  alice  since ") || !strings.Contains(out, `"spamming the greeting channel"`) {
		t.Fatalf("mmo_bans: %q %v", out, err)
	}

	// A real restart: the server (and its plugin process) stops and a new
	// one starts on the same data directory.
	srv.stop()
	srv = startServer(t, dir, nil)
	a = dial(t, srv, "alice")
	_, err = a.s.Login(bg, "alice", "pw-alice")
	if code(err) != mmoproto.AccountBanned || !strings.Contains(errDetail(err), "spamming") {
		t.Fatalf("banned login after the restart: %v", err)
	}
	b := dial(t, srv, "bob")
	_, err = b.s.Login(bg, "bob", "pw-bob")
	must(t, err)
	if out, err := srv.Exec("mmo_bans"); err != nil || !strings.HasPrefix(out, "banned accounts 1\n  alice") {
		t.Fatalf("mmo_bans after the restart: %q %v", out, err)
	}
	if _, err := srv.Exec("mmo_unban bob"); err == nil {
		t.Fatal("mmo_unban of an account that is not banned succeeded")
	}
	if out, err := srv.Exec("mmo_unban alice"); err != nil || out != "unbanned alice" {
		t.Fatalf("mmo_unban: %q %v", out, err)
	}
	_, err = a.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	if _, err := a.s.Enter(bg, "Alice"); err != nil {
		t.Fatalf("enter after the unban: %v", err)
	}
	if out, _ := srv.Exec("mmo_bans"); out != "banned accounts 0" {
		t.Fatalf("mmo_bans after the unban: %q", out)
	}
	out, _ = srv.Exec("help")
	for _, c := range []string{"mmo_ban", "mmo_unban", "mmo_bans"} {
		if !strings.Contains(out, c) {
			t.Errorf("help lacks %s:\n%s", c, out)
		}
	}
}

// TestRegistrationRateLimited: an address may register max_registrations
// accounts per registration_window; the next is refused
// RegistrationLimited with a retry time and counted; another address may.
func TestRegistrationRateLimited(t *testing.T) {
	dir := t.TempDir()
	writeModuleConfig(t, dir, "max_registrations = 2\nregistration_window = 600\n")
	srv := startServer(t, dir, nil)
	a := dialFrom(t, srv, "127.0.0.2", "a")
	for _, n := range []string{"ann", "amy"} {
		_, err := a.s.Register(bg, n, "pw")
		must(t, err)
	}
	r := rawFrom(t, srv, "127.0.0.2")
	v, err := scram.GenerateVerifier("pw", testIterations, nil)
	must(t, err)
	reg := &mmoproto.Register{RequestID: 7, Account: "ada", Iterations: uint32(v.Iterations), StoredKey: v.StoredKey, ServerKey: v.ServerKey}
	copy(reg.Salt[:], v.Salt)
	must(t, r.c.Send(reg.Type(), wire.ReliableOrdered, reg.Append(nil)))
	m := r.next(t)
	res, err := mmoproto.ParseResult(m.Payload)
	// 2 per 600 s: one comes back every 300 s.
	if m.Header.Type != mmoproto.TypeResult || err != nil || res.Code != mmoproto.RegistrationLimited || res.RetryAfterMS < 290_000 || res.RetryAfterMS > 300_000 {
		t.Fatalf("third registration: type %d %+v %v", m.Header.Type, res, err)
	}
	waitMetric(t, srv, "registrations_refused_total", 1)
	b := dialFrom(t, srv, "127.0.0.3", "b")
	if _, err := b.s.Register(bg, "ada", "pw"); err != nil {
		t.Fatalf("another address: %v", err)
	}
	waitMetric(t, srv, "registrations_total", 3)
}

// rawFrom is a raw client (see rawPlayer) from the loopback address from.
func rawFrom(t testing.TB, srv *server, from string) *raw {
	t.Helper()
	uc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(from), 0)))
	must(t, err)
	t.Cleanup(func() { uc.Close() })
	reg := gamemsg.NewRegistry()
	must(t, mmoclient.RegisterTypes(reg))
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "raw", Pin: srv.Pin(), Registry: reg, Conn: uc})
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return &raw{c: c}
}

// TestStrangersCannotLockOutTheOwner: wrong guesses at alice's password
// from address A get growing delays there, and alice logs in from address
// B at once.
func TestStrangersCannotLockOutTheOwner(t *testing.T) {
	dir := t.TempDir()
	writeModuleConfig(t, dir, "login_free_failures = 3\nlogin_backoff = 0.2\nlogin_backoff_max = 5\n")
	srv := startServer(t, dir, nil)
	owner := dialFrom(t, srv, "127.0.0.3", "owner")
	_, err := owner.s.Register(bg, "alice", "pw-alice")
	must(t, err)

	eve := rawFrom(t, srv, "127.0.0.2")
	guess := func() mmoproto.Result {
		t.Helper()
		return rawLogin(t, eve, "alice", "wrong")
	}
	for i := range 4 { // three free, the fourth sets the first delay
		if r := guess(); r.Code != mmoproto.AuthFailed {
			t.Fatalf("guess %d: %+v", i+1, r)
		}
	}
	var delays []uint32
	for range 3 {
		r := guess()
		at := time.Now()
		if r.Code != mmoproto.Throttled || r.RetryAfterMS == 0 {
			t.Fatalf("guess during the delay: %+v", r)
		}
		delays = append(delays, r.RetryAfterMS)
		// The owner, from another address, is never delayed.
		_, err := owner.s.Login(bg, "alice", "pw-alice")
		must(t, err)
		must(t, owner.s.Logout(bg))
		time.Sleep(time.Until(at.Add(time.Duration(r.RetryAfterMS)*time.Millisecond + 50*time.Millisecond)))
		if r := guess(); r.Code != mmoproto.AuthFailed {
			t.Fatalf("guess after the delay: %+v", r)
		}
	}
	// 200 ms, 400 ms, 800 ms (less the time the answer took).
	for i, d := range delays {
		lo, hi := uint32(200<<i)-100, uint32(200<<i)
		if d < lo || d > hi {
			t.Fatalf("delays %v ms: the %d-th is not about %d", delays, i+1, 200<<i)
		}
	}
	waitMetric(t, srv, "throttled_total", 3)
}

// rawLogin runs a SCRAM login over r and returns its refusal (Code OK
// means a LoginResult came).
func rawLogin(t testing.TB, r *raw, account, password string) mmoproto.Result {
	t.Helper()
	cb := r.c.ChannelBinding()
	cl, err := scram.NewClient(account, password, scram.ClientConfig{ChannelBinding: cb[:]})
	must(t, err)
	ls := &mmoproto.LoginStart{RequestID: 1, ClientFirst: cl.First()}
	must(t, r.c.Send(ls.Type(), wire.ReliableOrdered, ls.Append(nil)))
	m := r.next(t)
	if m.Header.Type == mmoproto.TypeResult {
		res, err := mmoproto.ParseResult(m.Payload)
		must(t, err)
		return res
	}
	ch, err := mmoproto.ParseLoginChallenge(m.Payload)
	must(t, err)
	final, err := cl.Final(ch.ServerFirst)
	must(t, err)
	lf := &mmoproto.LoginFinish{RequestID: 2, ClientFinal: final}
	must(t, r.c.Send(lf.Type(), wire.ReliableOrdered, lf.Append(nil)))
	m = r.next(t)
	if m.Header.Type != mmoproto.TypeResult {
		return mmoproto.Result{Code: mmoproto.OK}
	}
	res, err := mmoproto.ParseResult(m.Payload)
	must(t, err)
	return res
}

// challenge sends LoginStart for account over r and returns the parsed
// server-first-message.
func challenge(t testing.TB, r *raw, account string) scram.ServerFirst {
	t.Helper()
	cb := r.c.ChannelBinding()
	cl, err := scram.NewClient(account, "irrelevant", scram.ClientConfig{ChannelBinding: cb[:]})
	must(t, err)
	ls := &mmoproto.LoginStart{RequestID: 1, ClientFirst: cl.First()}
	must(t, r.c.Send(ls.Type(), wire.ReliableOrdered, ls.Append(nil)))
	m := r.next(t)
	ch, err := mmoproto.ParseLoginChallenge(m.Payload)
	if m.Header.Type != mmoproto.TypeLoginChallenge || err != nil {
		t.Fatalf("LoginStart %s answered type %d: %v", account, m.Header.Type, err)
	}
	sf, err := scram.ParseServerFirst(ch.ServerFirst)
	must(t, err)
	return sf
}

// TestUnknownNameChallengeLooksReal: an unknown name's challenge has the
// shape of a real account's (a 16-byte salt, the current iteration count),
// its salt is stable across attempts and across restarts (the secret is
// kept in the data directory, 0600); after the current count rises, an
// older account is upgraded at its next login, so counts converge.
func TestUnknownNameChallengeLooksReal(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir, nil)
	p := dial(t, srv, "p")
	_, err := p.s.Register(bg, "alice", "pw-alice")
	must(t, err)
	r := rawPlayer(t, srv, "r")
	known, unknown := challenge(t, r, "alice"), challenge(t, r, "zed")
	if len(known.Salt) != len(unknown.Salt) || len(unknown.Salt) != scram.SaltLen || known.Iterations != unknown.Iterations || unknown.Iterations != testIterations {
		t.Fatalf("alice: salt %d bytes, %d iterations; zed: salt %d bytes, %d iterations",
			len(known.Salt), known.Iterations, len(unknown.Salt), unknown.Iterations)
	}
	if again := challenge(t, r, "ZED"); string(again.Salt) != string(unknown.Salt) {
		t.Fatal("the unknown name's salt changed between attempts")
	}
	if string(unknown.Salt) == string(challenge(t, r, "zoe").Salt) {
		t.Fatal("two unknown names share a salt")
	}
	fi, err := os.Stat(filepath.Join(dir, "modules", "mmo", "mmo.secret"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mmo.secret: %v %v", fi, err)
	}

	// Restart with a higher current count.
	srv.stop()
	writeModuleConfig(t, dir, "iterations = 8192\n")
	srv = startServer(t, dir, nil)
	r = rawPlayer(t, srv, "r")
	zed := challenge(t, r, "zed")
	if string(zed.Salt) != string(unknown.Salt) || zed.Iterations != 8192 {
		t.Fatalf("after the restart zed's salt changed or its count is %d", zed.Iterations)
	}
	p = dial(t, srv, "p")
	_, err = p.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	p.waitEvent(t, "mmo verifier upgraded to 8192 iterations")
	waitMetric(t, srv, "verifier_upgrades_total", 1)
	now := challenge(t, r, "alice")
	if now.Iterations != 8192 || len(now.Salt) != scram.SaltLen || string(now.Salt) == string(known.Salt) {
		t.Fatalf("after the upgrade alice has %d iterations, salt %x (was %x)", now.Iterations, now.Salt, known.Salt)
	}
	// The new verifier logs in, and asks for no upgrade.
	p2 := dial(t, srv, "p2")
	_, err = p2.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	if _, err := p2.s.Characters(bg); err != nil { // a round trip after the login
		t.Fatal(err)
	}
	p2.mu.Lock()
	defer p2.mu.Unlock()
	for _, e := range p2.events {
		if strings.Contains(e, "verifier") {
			t.Fatalf("a second upgrade: %q", p2.events)
		}
	}
}

// TestSetVerifierOnlyWhenAsked: SetVerifier outside an asked upgrade is
// refused OutOfOrder (a session cannot change the account's password).
func TestSetVerifierOnlyWhenAsked(t *testing.T) {
	srv := startServer(t, t.TempDir(), nil)
	p := dial(t, srv, "p")
	_, err := p.s.Register(bg, "alice", "pw-alice")
	must(t, err)
	r := rawPlayer(t, srv, "r")
	sv := &mmoproto.SetVerifier{RequestID: 9, Iterations: testIterations}
	must(t, r.c.Send(sv.Type(), wire.ReliableOrdered, sv.Append(nil)))
	if res, _ := mmoproto.ParseResult(r.next(t).Payload); res.Code != mmoproto.NotLoggedIn {
		t.Fatalf("SetVerifier before login: %+v", res)
	}
	if res := rawLogin(t, r, "alice", "pw-alice"); res.Code != mmoproto.OK {
		t.Fatalf("login: %+v", res)
	}
	must(t, r.c.Send(sv.Type(), wire.ReliableOrdered, sv.Append(nil)))
	if res, _ := mmoproto.ParseResult(r.next(t).Payload); res.Code != mmoproto.OutOfOrder {
		t.Fatalf("SetVerifier without an upgrade: %+v", res)
	}
}

// TestGreetingAfterAppear: with replication once a second, Bob enters
// next to Ann and Cid and Ann greets him at once, before any replication
// step told Bob of Ann or Cid of Bob: each sees the characters the
// greeting names appear before the greeting.
func TestGreetingAfterAppear(t *testing.T) {
	dir := t.TempDir()
	writeModuleConfig(t, dir, "replication_rate = 1\n")
	srv := startServer(t, dir, nil)
	enterAs := func(account, char string) *player {
		p := dial(t, srv, account)
		_, err := p.s.Register(bg, account, "pw-"+account)
		must(t, err)
		_, err = p.s.Login(bg, account, "pw-"+account)
		must(t, err)
		must(t, p.s.Create(bg, char))
		_, err = p.s.Enter(bg, char)
		must(t, err)
		return p
	}
	ann, cid := enterAs("ann", "Ann"), enterAs("cid", "Cid")
	cid.waitEvent(t, "mmo Ann appeared")
	ann.waitEvent(t, "mmo Cid appeared")
	for round := range 3 {
		bobAcct, bobChar := "bob"+string(rune('a'+round)), "Bob"+string(rune('a'+round))
		bob := dial(t, srv, bobAcct)
		_, err := bob.s.Register(bg, bobAcct, "pw")
		must(t, err)
		_, err = bob.s.Login(bg, bobAcct, "pw")
		must(t, err)
		must(t, bob.s.Create(bg, bobChar))
		_, err = bob.s.Enter(bg, bobChar)
		must(t, err)
		must(t, ann.s.Greet(bg, bobChar))
		greeting := "mmo greeting: Ann greets " + bobChar
		for _, o := range []struct {
			p    *player
			sees string
		}{{bob, "mmo Ann appeared"}, {cid, "mmo " + bobChar + " appeared"}} {
			at := o.p.waitEvent(t, greeting)
			o.p.mu.Lock()
			ia, ig := -1, -1
			for i, e := range o.p.events {
				if strings.HasPrefix(e, o.sees) && ia < 0 {
					ia = i
				}
				if strings.HasPrefix(e, greeting) && ig < 0 {
					ig = i
				}
			}
			events := append([]string(nil), o.p.events...)
			o.p.mu.Unlock()
			if ia < 0 || ia > ig {
				t.Fatalf("round %d: %q came before %q (at %v): %q", round, greeting, o.sees, at, events)
			}
		}
		// Replication agrees: nobody is told twice or left with a ghost.
		time.Sleep(1200 * time.Millisecond)
		for _, p := range []*player{bob, cid} {
			p.mu.Lock()
			n := 0
			for _, e := range p.events {
				if strings.HasPrefix(e, "mmo Ann appeared") || strings.HasPrefix(e, "mmo "+bobChar+" appeared") {
					n++
				}
			}
			p.mu.Unlock()
			if p == bob && n != 1 || p == cid && n != 2 {
				t.Fatalf("round %d: %d appear lines", round, n)
			}
		}
		must(t, bob.s.Leave(bg))
	}
}

// TestBanOnAnotherServer: two servers share a PostgreSQL database; a ban
// made on A ends alice's login on B (at B's next comparison with the
// database, within lease/5) with LoggedOut{Banned}, and B refuses her next
// login AccountBanned.
func TestBanOnAnotherServer(t *testing.T) {
	url := sharedDB(t)
	srvA := startServer(t, sharedDataDir(t, url, 5), nil)
	srvB := startServer(t, sharedDataDir(t, url, 5), nil)
	b := dial(t, srvB, "alice-on-b")
	_, err := b.s.Register(bg, "alice", "pw-alice")
	must(t, err)
	_, err = b.s.Login(bg, "alice", "pw-alice")
	must(t, err)
	must(t, b.s.Create(bg, "Hero"))
	_, err = b.s.Enter(bg, "Hero")
	must(t, err)

	banned := time.Now()
	if out, err := srvA.Exec("mmo_ban alice botting"); err != nil || out != "banned alice" {
		t.Fatalf("mmo_ban on A: %q %v", out, err)
	}
	ended := b.waitEvent(t, "mmo logged out: Banned")
	if took := ended.Sub(banned); took > 5*time.Second {
		t.Fatalf("B ended the login %v after the ban", took)
	}
	_, err = b.s.Login(bg, "alice", "pw-alice")
	if code(err) != mmoproto.AccountBanned || !strings.Contains(errDetail(err), "botting") {
		t.Fatalf("login on B after the ban: %v", err)
	}
	if out, _ := srvB.Exec("mmo_online"); !strings.HasPrefix(out, "online 0, in world 0") {
		t.Fatalf("mmo_online on B: %q", out)
	}
}
