package host_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/roomauth"
)

// guessTally is what one guessing address saw.
type guessTally struct {
	sessions int // sessions it opened
	wrong    int // RoomResult WrongPassword: a proof the server checked
	limited  int // RoomResult RateLimited: refused unchecked
	kicked   int // sessions that ended with Disconnect RateLimited
	err      error
}

// dialFrom connects a client whose datagrams come from the loopback
// address from (the server sees another client address). It reports
// errors instead of failing the test: it runs on worker goroutines.
func dialFrom(ctx context.Context, srv *host.Server, from netip.Addr, name string) (*netstack.Client, error) {
	uc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(from, 0)))
	if err != nil {
		return nil, err
	}
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin(), Conn: uc})
	if err != nil {
		uc.Close()
		return nil, err
	}
	return c, nil
}

// guessSession sends RoomJoins with random proofs for room as fast as the
// default request budget allows (a burst of 10, then 5 per second) until
// the server ends the session or until passes; it counts the answers.
func guessSession(c *netstack.Client, room uint32, until time.Time, tally *guessTally) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := 0; ; i++ {
			var proof [roomauth.KeyLen]byte
			_, _ = rand.Read(proof[:])
			if c.Send(gamemsg.TypeRoomJoin, wire.ReliableOrdered, gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: room, Proof: proof[:]})) != nil {
				return
			}
			if i < 9 {
				continue // the burst
			}
			select {
			case <-stop:
				return
			case <-c.Done():
				return
			case <-time.After(210 * time.Millisecond): // a hair under 5 per second
			}
		}
	}()
	ctx, cancel := context.WithDeadline(context.Background(), until)
	defer cancel()
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			break
		}
		if m.Header.Type != gamemsg.TypeRoomResult {
			continue
		}
		r, err := gamemsg.ParseRoomResult(m.Payload)
		if err != nil || r.Request != gamemsg.TypeRoomJoin {
			continue
		}
		switch r.Code {
		case gamemsg.RoomWrongPassword:
			tally.wrong++
		case gamemsg.RoomRateLimited:
			tally.limited++
		}
	}
	select {
	case <-c.Done():
		if reason, _ := c.CloseReason(); reason == wire.DisconnectRateLimited {
			tally.kicked++
		}
	default:
		c.Close()
	}
}

// guessFrom keeps a guessing session open from address from until passes:
// a kicked session is replaced by a new one, as an attacker would.
func guessFrom(srv *host.Server, from netip.Addr, room uint32, until time.Time) guessTally {
	var tally guessTally
	for time.Now().Before(until) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := dialFrom(ctx, srv, from, fmt.Sprintf("eve%d", tally.sessions))
		cancel()
		if err != nil {
			var he *netstack.HandshakeError
			if errors.As(err, &he) && time.Now().Before(until) {
				time.Sleep(100 * time.Millisecond) // the address's connect budget
				continue
			}
			if time.Now().Before(until) {
				tally.err = err
			}
			return tally
		}
		tally.sessions++
		guessSession(c, room, until, &tally)
	}
	return tally
}

// TestRoomPasswordGuessingIsThrottled: eight addresses guess one room's
// password as fast as their request budgets allow for four seconds,
// opening a new session whenever theirs is ended. The server checks at
// most 10 wrong proofs per second for the room, kicks every session that
// keeps guessing (RateLimited), tells the owner, and the right password
// still opens the room once the back-off has passed.
func TestRoomPasswordGuessingIsThrottled(t *testing.T) {
	srv := startLobby(t, []string{"entities"}, nil, func(c *config.Config) {
		d := config.Default()
		c.Rooms.RequestsPerSecond, c.Rooms.RequestBurst = d.Rooms.RequestsPerSecond, d.Rooms.RequestBurst
	})
	alice := newRoomClient(t, srv, "alice")
	v, err := roomauth.NewVerifier("sesame", roomauth.MinIterations, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	room := alice.ok(gamemsg.TypeRoomCreate, gamemsg.AppendRoomCreate(nil, &gamemsg.RoomCreate{Name: "secret", Mode: "entities",
		Password: true, Salt: v.Salt, Iterations: v.Iterations, StoredKey: v.StoredKey}))

	const attackers, attack = 8, 4 * time.Second
	start := time.Now()
	until := start.Add(attack)
	tallies := make([]guessTally, attackers)
	var wg sync.WaitGroup
	for i := range attackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tallies[i] = guessFrom(srv, netip.AddrFrom4([4]byte{127, byte(20 + i), 0, 1}), room, until)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var total guessTally
	for i, tl := range tallies {
		if tl.err != nil {
			t.Fatalf("attacker %d: %v", i, tl.err)
		}
		total.sessions += tl.sessions
		total.wrong += tl.wrong
		total.limited += tl.limited
		total.kicked += tl.kicked
	}
	rate := float64(total.wrong) / elapsed.Seconds()
	t.Logf("%d addresses, %v: %d sessions, %d wrong proofs checked (%.1f per second), %d refused unchecked, %d sessions kicked",
		attackers, elapsed.Round(time.Millisecond), total.sessions, total.wrong, rate, total.limited, total.kicked)
	if rate > 10 {
		t.Errorf("%.1f wrong proofs per second checked against one room, want at most 10", rate)
	}
	for i, tl := range tallies {
		if tl.kicked == 0 {
			t.Errorf("attacker %d kept guessing in %d session(s) and was never kicked (%d wrong, %d refused)", i, tl.sessions, tl.wrong, tl.limited)
		}
	}
	// The server's counters agree with what the attackers saw, and the
	// owner was told.
	pw := srv.Stats().RoomPasswords
	t.Logf("server: %+v", pw)
	if pw.Wrong < uint64(total.wrong) || float64(pw.Wrong)/elapsed.Seconds() > 10 || pw.Kicked < uint64(total.kicked) || pw.Refused < uint64(total.limited) {
		t.Errorf("server counters %+v, attackers saw %d wrong, %d refused, %d kicked", pw, total.wrong, total.limited, total.kicked)
	}
	ev := alice.event(gamemsg.RoomPasswordFailures, 0)
	if ev.Room != room || ev.Value == 0 || ev.Name == "" {
		t.Errorf("the owner's notice: %+v", ev)
	}

	// The right password opens the room once the back-off has passed.
	bob := newRoomClient(t, srv, "bob")
	good, _ := roomauth.Proof("sesame", v.Salt, v.Iterations, room, bob.c.ChannelBinding())
	deadline := time.Now().Add(60 * time.Second)
	for {
		bob.send(gamemsg.TypeRoomJoin, gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: room, Proof: good[:]}))
		r := bob.result(gamemsg.TypeRoomJoin)
		if r.Code == gamemsg.RoomOK {
			break
		}
		if r.Code != gamemsg.RoomRateLimited || time.Now().After(deadline) {
			t.Fatalf("the right password after the attack: %v (%s)", r.Code, r.Detail)
		}
		time.Sleep(time.Second)
	}
}
