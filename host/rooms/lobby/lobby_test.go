package lobby

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/roomauth"
)

var t0 = time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)

func newLobby() *Lobby {
	return New(Config{Max: 2, MaxCapacity: 3, DefaultCapacity: 2, Modes: []string{"deathmatch", "tag"}})
}

func code(t *testing.T, err error) gamemsg.RoomCode {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not a *lobby.Error", err)
	}
	return e.Code
}

func mustCreate(t *testing.T, l *Lobby, client uint32, req gamemsg.RoomCreate) *Entry {
	t.Helper()
	r, err := l.Create(client, &req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCreateRules(t *testing.T) {
	l := newLobby()
	cases := []struct {
		name   string
		client uint32
		req    gamemsg.RoomCreate
		want   gamemsg.RoomCode
	}{
		{"unknown mode", 1, gamemsg.RoomCreate{Name: "a", Mode: "ctf"}, gamemsg.RoomUnknownMode},
		{"capacity over the max", 1, gamemsg.RoomCreate{Name: "a", Mode: "tag", Capacity: 4}, gamemsg.RoomBadRequest},
		{"password iterations too low", 1, gamemsg.RoomCreate{Name: "a", Mode: "tag", Password: true, Iterations: 10}, gamemsg.RoomBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := l.Create(c.client, &c.req)
			if got := code(t, err); got != c.want {
				t.Fatalf("code %v, want %v (%v)", got, c.want, err)
			}
		})
	}
	r := mustCreate(t, l, 1, gamemsg.RoomCreate{Name: "a", Mode: "tag"})
	if r.Capacity != 2 || r.Owner != 1 || r.Status != gamemsg.RoomWaiting || l.Of(1) != r {
		t.Fatalf("room %+v", r)
	}
	if _, err := l.Create(1, &gamemsg.RoomCreate{Name: "b", Mode: "tag"}); code(t, err) != gamemsg.RoomAlreadyInRoom {
		t.Fatalf("second create by a member: %v", err)
	}
	mustCreate(t, l, 2, gamemsg.RoomCreate{Name: "b", Mode: "deathmatch"})
	if _, err := l.Create(3, &gamemsg.RoomCreate{Name: "c", Mode: "tag"}); code(t, err) != gamemsg.RoomTooManyRooms {
		t.Fatalf("create past max: %v", err)
	}
}

func TestCreatedPerClient(t *testing.T) {
	l := New(Config{Max: 10, Modes: []string{"tag"}, CreatedPerClient: 2})
	a := mustCreate(t, l, 1, gamemsg.RoomCreate{Name: "a", Mode: "tag"})
	l.Leave(1, t0)
	mustCreate(t, l, 1, gamemsg.RoomCreate{Name: "b", Mode: "tag"})
	l.Leave(1, t0)
	if _, err := l.Create(1, &gamemsg.RoomCreate{Name: "c", Mode: "tag"}); code(t, err) != gamemsg.RoomTooManyRooms {
		t.Fatalf("a third open room of one creator: %v", err)
	}
	if _, err := l.Close(a.ID); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, l, 1, gamemsg.RoomCreate{Name: "c", Mode: "tag"})
}

func TestJoinLeaveAndOwnership(t *testing.T) {
	l := New(Config{Modes: []string{"tag"}, MaxCapacity: 3})
	r := mustCreate(t, l, 1, gamemsg.RoomCreate{Name: "a", Mode: "tag", Capacity: 3})
	for _, c := range []uint32{2, 3} {
		if _, _, err := l.Join(Joiner{Client: c}, r.ID, nil, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := l.Join(Joiner{Client: 4}, r.ID, nil, t0); code(t, err) != gamemsg.RoomFull {
		t.Fatalf("join a full room: %v", err)
	}
	if _, _, err := l.Join(Joiner{Client: 4}, 99, nil, t0); code(t, err) != gamemsg.RoomNoSuchRoom {
		t.Fatalf("join no room: %v", err)
	}
	if _, err := l.Rename(2, "mine"); code(t, err) != gamemsg.RoomNotOwner {
		t.Fatalf("rename by a non-owner: %v", err)
	}
	if _, err := l.Start(3); code(t, err) != gamemsg.RoomNotOwner {
		t.Fatalf("start by a non-owner: %v", err)
	}
	if _, _, err := l.Kick(2, 3, t0); code(t, err) != gamemsg.RoomNotOwner {
		t.Fatalf("kick by a non-owner: %v", err)
	}
	// The owner leaves: the longest present takes over.
	_, owner, err := l.Leave(1, t0)
	if err != nil || owner != 2 || r.Owner != 2 {
		t.Fatalf("leave of the owner: new owner %d (room %d), %v", owner, r.Owner, err)
	}
	if _, err := l.Rename(2, "mine"); err != nil || r.Name != "mine" {
		t.Fatalf("rename by the new owner: %v", err)
	}
	if _, owner, err := l.Kick(2, 3, t0); err != nil || owner != 0 || r.Has(3) {
		t.Fatalf("kick: owner %d, %v", owner, err)
	}
	if _, _, err := l.Kick(2, 3, t0); code(t, err) != gamemsg.RoomNoSuchPlayer {
		t.Fatalf("kick of one gone: %v", err)
	}
	if _, _, err := l.Leave(3, t0); code(t, err) != gamemsg.RoomNotInRoom {
		t.Fatalf("leave from the lobby: %v", err)
	}
	if got := l.Expired(t0.Add(time.Hour), time.Second); len(got) != 0 {
		t.Fatalf("a room with a player expired: %v", got)
	}
	if r2, owner := l.Depart(2, t0); r2 != r || owner != 0 || len(r.Members) != 0 {
		t.Fatalf("depart of the last: %v %d", r2, owner)
	}
	if got := l.Expired(t0.Add(time.Second-1), time.Second); len(got) != 0 {
		t.Fatal("expired before the grace time")
	}
	if got := l.Expired(t0.Add(time.Second), time.Second); len(got) != 1 || got[0] != r {
		t.Fatalf("expired after the grace time: %v", got)
	}
}

func TestStartAndPause(t *testing.T) {
	l := New(Config{Modes: []string{"tag"}, Pause: PauseOwner})
	r := mustCreate(t, l, 1, gamemsg.RoomCreate{Name: "a", Mode: "tag"})
	l.Join(Joiner{Client: 2}, r.ID, nil, t0)
	if _, _, err := l.TogglePause(1); code(t, err) != gamemsg.RoomNotStarted {
		t.Fatalf("pause before the start: %v", err)
	}
	if _, err := l.Start(1); err != nil || r.Status != gamemsg.RoomPlaying {
		t.Fatalf("start: %v (%v)", err, r.Status)
	}
	if _, err := l.Start(1); code(t, err) != gamemsg.RoomAlreadyStarted {
		t.Fatalf("second start: %v", err)
	}
	if _, _, err := l.TogglePause(2); code(t, err) != gamemsg.RoomNotOwner {
		t.Fatalf("pause by a member with pause = owner: %v", err)
	}
	if _, paused, err := l.TogglePause(1); err != nil || !paused || r.Status != gamemsg.RoomPaused {
		t.Fatalf("pause: %v %v", paused, err)
	}
	if _, paused, err := l.TogglePause(1); err != nil || paused || r.Status != gamemsg.RoomPlaying {
		t.Fatalf("resume: %v %v", paused, err)
	}
	l.MatchEnded(r)
	if _, err := l.Start(1); code(t, err) != gamemsg.RoomNotAllowed {
		t.Fatalf("start of an ended match: %v", err)
	}
	if !l.NextMap(r) || r.Status != gamemsg.RoomWaiting {
		t.Fatalf("next map: %v", r.Status)
	}
}

func TestPassword(t *testing.T) {
	l := New(Config{Modes: []string{"tag"}})
	v, err := roomauth.NewVerifier("sesame", roomauth.MinIterations, bytes.NewReader(make([]byte, 16)))
	if err != nil {
		t.Fatal(err)
	}
	r := mustCreate(t, l, 1, gamemsg.RoomCreate{Name: "a", Mode: "tag", Password: true, Salt: v.Salt, Iterations: v.Iterations, StoredKey: v.StoredKey})
	info := r.Info("arena")
	if !info.Password || info.Salt != v.Salt || info.Iterations != v.Iterations {
		t.Fatalf("info %+v", info)
	}
	cb := [32]byte{9}
	bob := Joiner{Client: 2, Source: SourceOf(netip.MustParseAddr("10.0.0.2")), Binding: cb}
	if _, _, err := l.Join(bob, r.ID, nil, t0); code(t, err) != gamemsg.RoomWrongPassword {
		t.Fatalf("join without a proof: %v", err)
	}
	bad, _ := roomauth.Proof("open", v.Salt, v.Iterations, uint32(r.ID), cb)
	if _, _, err := l.Join(bob, r.ID, bad[:], t0); code(t, err) != gamemsg.RoomWrongPassword {
		t.Fatalf("join with a wrong password: %v", err)
	}
	replayed, _ := roomauth.Proof("sesame", v.Salt, v.Iterations, uint32(r.ID), [32]byte{8})
	if _, _, err := l.Join(bob, r.ID, replayed[:], t0); code(t, err) != gamemsg.RoomWrongPassword {
		t.Fatalf("join with another session's proof: %v", err)
	}
	good, _ := roomauth.Proof("sesame", v.Salt, v.Iterations, uint32(r.ID), cb)
	if _, _, err := l.Join(bob, r.ID, good[:], t0); err != nil {
		t.Fatalf("join with the password: %v", err)
	}
}

func TestFixedRoom(t *testing.T) {
	l := New(Config{})
	r := l.OpenFixed("server", "deathmatch", 32)
	l.Enter(1, r)
	if _, _, err := l.Leave(1, t0); code(t, err) != gamemsg.RoomNotAllowed {
		t.Fatalf("leave the server's room: %v", err)
	}
	if _, err := l.Start(1); code(t, err) != gamemsg.RoomAlreadyStarted {
		t.Fatalf("start: %v", err)
	}
	if _, err := l.Rename(1, "x"); code(t, err) != gamemsg.RoomNotOwner {
		t.Fatalf("rename: %v", err)
	}
	if _, _, err := l.TogglePause(1); code(t, err) != gamemsg.RoomNotAllowed {
		t.Fatalf("pause by a player: %v", err)
	}
	if _, err := l.Close(r.ID); code(t, err) != gamemsg.RoomNotAllowed {
		t.Fatalf("close: %v", err)
	}
	if got, _ := l.Depart(1, t0); got != r || l.Expired(t0.Add(time.Hour), 0) != nil {
		t.Fatalf("the server's room expired")
	}
}
