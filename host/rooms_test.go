package host_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/hosttest"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/roomauth"
)

// startLobby runs a server with a lobby whose modes are modes (names:
// testdata/NAME.lua, or a plugin of plugins by name).
func startLobby(t *testing.T, modes []string, plugins map[string]string, set func(*config.Config)) *host.Server {
	t.Helper()
	cfg := config.Default()
	port, dataDir := 0, shortDataDir(t)
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir, Rooms: true, Modes: modes}, func(string) string { return "" })
	cfg.Match.WarmupSeconds = 0
	cfg.Match.IntermissionSeconds = 0
	cfg.Rooms.RequestsPerSecond, cfg.Rooms.RequestBurst = 100, 100
	if set != nil {
		set(&cfg)
	}
	srv, err := host.New(host.Options{Config: cfg, Logger: testLogger(), ScriptsDir: "testdata",
		Builtin: func(name string) (string, []string, bool) {
			p, ok := plugins[name]
			return p, nil, ok
		}})
	if err != nil {
		t.Fatal(err)
	}
	hosttest.Run(t, srv)
	return srv
}

// roomClient is a client that records everything it receives.
type roomClient struct {
	t      *testing.T
	c      *netstack.Client
	name   string
	mu     sync.Mutex
	msgs   []netstack.Message
	cursor int
	more   chan struct{}
}

func roomyRegistry(t *testing.T) *wire.Registry {
	reg := gamemsg.NewRegistry()
	for _, s := range []wire.Schema{
		{ID: 1400, Name: "hello", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 3, MaxLen: 66, StringFieldOffset: 0, RequiresAdmitted: true},
		{ID: 1401, Name: "echo", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 3, MaxLen: 200, StringFieldOffset: 0, RequiresAdmitted: true},
	} {
		if err := reg.Register("roomy", s); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func newRoomClient(t *testing.T, srv *host.Server, name string) *roomClient {
	t.Helper()
	rc := &roomClient{t: t, c: dialAs(t, srv, name, roomyRegistry(t)), name: name, more: make(chan struct{}, 1)}
	go func() {
		for {
			m, err := rc.c.Receive(context.Background())
			if err != nil {
				return
			}
			m.Payload = slices.Clone(m.Payload)
			rc.mu.Lock()
			rc.msgs = append(rc.msgs, m)
			rc.mu.Unlock()
			select {
			case rc.more <- struct{}{}:
			default:
			}
		}
	}()
	return rc
}

func (rc *roomClient) id() uint32 { return rc.c.ID() }

func (rc *roomClient) send(typ wire.MessageType, payload []byte) {
	rc.t.Helper()
	ch := wire.ReliableOrdered
	if typ == gamemsg.TypeRoomChat || typ == gamemsg.TypeChatMessage || typ == 1400 {
		ch = wire.Reliable
	}
	if err := rc.c.Send(typ, ch, payload); err != nil {
		rc.t.Fatalf("%s sends %v: %v", rc.name, typ, err)
	}
}

// await returns the first message after the cursor that match accepts,
// moving the cursor past it.
func (rc *roomClient) await(what string, match func(m netstack.Message) bool) netstack.Message {
	rc.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		rc.mu.Lock()
		for i := rc.cursor; i < len(rc.msgs); i++ {
			if match(rc.msgs[i]) {
				rc.cursor = i + 1
				m := rc.msgs[i]
				rc.mu.Unlock()
				return m
			}
		}
		rc.mu.Unlock()
		select {
		case <-rc.more:
		case <-deadline:
			rc.t.Fatalf("%s: no %s within 15 s", rc.name, what)
		}
	}
}

func (rc *roomClient) result(req wire.MessageType) gamemsg.RoomResult {
	rc.t.Helper()
	m := rc.await("RoomResult for "+req.String(), func(m netstack.Message) bool {
		if m.Header.Type != gamemsg.TypeRoomResult {
			return false
		}
		r, err := gamemsg.ParseRoomResult(m.Payload)
		return err == nil && r.Request == req
	})
	r, _ := gamemsg.ParseRoomResult(m.Payload)
	return r
}

// ok sends a request and requires an OK answer; it returns the room.
func (rc *roomClient) ok(typ wire.MessageType, payload []byte) uint32 {
	rc.t.Helper()
	rc.send(typ, payload)
	r := rc.result(typ)
	if r.Code != gamemsg.RoomOK {
		rc.t.Fatalf("%s: %v answered %v: %s", rc.name, typ, r.Code, r.Detail)
	}
	return r.Room
}

// refused sends a request and requires code.
func (rc *roomClient) refused(typ wire.MessageType, payload []byte, code gamemsg.RoomCode) {
	rc.t.Helper()
	rc.send(typ, payload)
	if r := rc.result(typ); r.Code != code {
		rc.t.Fatalf("%s: %v answered %v (%s), want %v", rc.name, typ, r.Code, r.Detail, code)
	}
}

func (rc *roomClient) event(kind gamemsg.RoomEventKind, client uint32) gamemsg.RoomEvent {
	rc.t.Helper()
	m := rc.await(fmt.Sprintf("RoomEvent %v of client %d", kind, client), func(m netstack.Message) bool {
		if m.Header.Type != gamemsg.TypeRoomEvent {
			return false
		}
		ev, err := gamemsg.ParseRoomEvent(m.Payload)
		return err == nil && ev.Kind == kind && (client == 0 || ev.Client == client)
	})
	ev, _ := gamemsg.ParseRoomEvent(m.Payload)
	return ev
}

// all returns every message of typ received so far.
func (rc *roomClient) all(typ wire.MessageType) []netstack.Message {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []netstack.Message
	for _, m := range rc.msgs {
		if m.Header.Type == typ {
			out = append(out, m)
		}
	}
	return out
}

func create(name, mode string, capacity uint16) []byte {
	return gamemsg.AppendRoomCreate(nil, &gamemsg.RoomCreate{Name: name, Mode: mode, Capacity: capacity})
}

func join(room uint32) []byte { return gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: room}) }

func hello(text string) []byte {
	w := wire.AppendWriter(nil)
	w.Str(text)
	return w.Bytes()
}

func echoText(m netstack.Message) string {
	r := wire.NewReader(m.Payload)
	return r.Str()
}

// TestRoomsIsolateEntitiesChatAndModules: two rooms of a Lua mode (a Lua
// state each) and two of a Go plugin served from one process, four
// players: every player sees only its room's entities, module messages
// and chat; the owner rules hold; the owner leaving hands the room on;
// pause reaches its room only; a room's module failing closes that room
// alone; an empty room closes after the grace time.
func TestRoomsIsolateEntitiesChatAndModules(t *testing.T) {
	roomy := testplugin.Build(t, "./host/testdata/plugins/roomy")
	srv := startLobby(t, []string{"entities", "roomy"}, map[string]string{"roomy": roomy}, func(c *config.Config) {
		c.Rooms.EmptyGraceSeconds = 0.2
	})
	alice, bob, carol, dave := newRoomClient(t, srv, "alice"), newRoomClient(t, srv, "bob"), newRoomClient(t, srv, "carol"), newRoomClient(t, srv, "dave")

	// The lobby: the modes, no rooms; an unknown mode is refused.
	dave.send(gamemsg.TypeRoomListRequest, gamemsg.AppendRoomListRequest(nil, &gamemsg.RoomListRequest{}))
	m := dave.await("RoomList", func(m netstack.Message) bool { return m.Header.Type == gamemsg.TypeRoomList })
	if rl, err := gamemsg.ParseRoomList(m.Payload); err != nil || rl.Total != 0 || !slices.Equal(rl.Modes, []string{"entities", "roomy"}) {
		t.Fatalf("empty lobby's list: %+v %v", rl, err)
	}
	alice.refused(gamemsg.TypeRoomCreate, create("x", "ctf", 0), gamemsg.RoomUnknownMode)
	alice.refused(gamemsg.TypeRoomLeave, nil, gamemsg.RoomNotInRoom)

	// Lua rooms 1 (alice, bob) and 2 (carol).
	luaA := alice.ok(gamemsg.TypeRoomCreate, create("lua a", "entities", 2))
	if got := dave.await("RoomUpdate of the new room", func(m netstack.Message) bool {
		u, err := gamemsg.ParseRoomUpdate(m.Payload)
		return m.Header.Type == gamemsg.TypeRoomUpdate && err == nil && u.Room.ID == luaA
	}); got.Payload == nil {
		t.Fatal("no update")
	}
	bob.ok(gamemsg.TypeRoomJoin, join(luaA))
	alice.event(gamemsg.RoomJoined, bob.id())
	dave.refused(gamemsg.TypeRoomJoin, join(luaA), gamemsg.RoomFull)
	dave.refused(gamemsg.TypeRoomJoin, join(99), gamemsg.RoomNoSuchRoom)
	luaB := carol.ok(gamemsg.TypeRoomCreate, create("lua b", "entities", 0))
	if luaB == luaA {
		t.Fatalf("two rooms with id %d", luaA)
	}
	carol.refused(gamemsg.TypeRoomCreate, create("again", "entities", 0), gamemsg.RoomAlreadyInRoom)

	// Every Lua room spawns a ball per player (owned by it) and a sun.
	spawnOwners := func(rc *roomClient) map[uint32]bool {
		owners := map[uint32]bool{}
		for _, m := range rc.all(gamemsg.TypeEntitySpawn) {
			if sp, err := gamemsg.ParseEntitySpawn(m.Payload); err == nil {
				owners[sp.Owner] = true
			}
		}
		return owners
	}
	eventually(t, "the balls of room A reach alice and bob, room B's reaches carol", func() bool {
		a, b, c := spawnOwners(alice), spawnOwners(bob), spawnOwners(carol)
		return a[alice.id()] && a[bob.id()] && b[alice.id()] && b[bob.id()] && c[carol.id()]
	})

	// Chat: room chat and ChatMessage reach the room, global chat all.
	alice.send(gamemsg.TypeRoomChat, gamemsg.AppendRoomChatRequest(nil, &gamemsg.RoomChat{Scope: gamemsg.ChatRoom, Text: "room a only"}))
	bob.await("alice's room chat", func(m netstack.Message) bool {
		rc, err := gamemsg.ParseRoomChat(m.Payload)
		return m.Header.Type == gamemsg.TypeRoomChat && err == nil && rc.Text == "room a only" && rc.Room == luaA && rc.SenderName == "alice"
	})
	carol.send(gamemsg.TypeChatMessage, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "room b only"}))
	dave.send(gamemsg.TypeChatMessage, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "lobby only"}))
	bob.send(gamemsg.TypeRoomChat, gamemsg.AppendRoomChatRequest(nil, &gamemsg.RoomChat{Scope: gamemsg.ChatGlobal, Text: "to everybody"}))
	for _, rc := range []*roomClient{alice, carol, dave} {
		rc.await("bob's global chat", func(m netstack.Message) bool {
			c, err := gamemsg.ParseRoomChat(m.Payload)
			return m.Header.Type == gamemsg.TypeRoomChat && err == nil && c.Scope == gamemsg.ChatGlobal && c.Text == "to everybody"
		})
	}

	// The plugin: rooms 3 (dave) and 4 (carol moves there), one process.
	roomyA := dave.ok(gamemsg.TypeRoomCreate, create("plugin a", "roomy", 0))
	carol.ok(gamemsg.TypeRoomLeave, nil)
	roomyB := carol.ok(gamemsg.TypeRoomCreate, create("plugin b", "roomy", 0))
	eventually(t, "room B closes once empty past the grace time", func() bool {
		out, _ := srv.Exec("rooms")
		return !strings.Contains(out, "lua b")
	})
	dave.send(1400, hello("hi from a"))
	carol.send(1400, hello("hi from b"))
	dave.await("dave's echo in room a", func(m netstack.Message) bool {
		return m.Header.Type == 1401 && echoText(m) == fmt.Sprintf("room %d: dave: hi from a", roomyA)
	})
	carol.await("carol's echo in room b", func(m netstack.Message) bool {
		return m.Header.Type == 1401 && echoText(m) == fmt.Sprintf("room %d: carol: hi from b", roomyB)
	})
	out, err := srv.Exec("roomy_rooms @" + fmt.Sprint(roomyA))
	if err != nil || !regexp.MustCompile(fmt.Sprintf(`room %d pid (\d+) paused false: dave\nroom %d pid (\d+) paused false: carol`, roomyA, roomyB)).MatchString(out) {
		t.Fatalf("roomy_rooms: %q %v", out, err)
	}
	if _, err := srv.Exec("roomy_rooms"); err == nil || !strings.Contains(err.Error(), "name one first") {
		t.Fatalf("roomy_rooms without a room: %v", err)
	}
	mods, _ := srv.Exec("module list")
	if strings.Count(mods, "roomy ") != 1 || !strings.Contains(mods, fmt.Sprintf("rooms %d,%d", roomyA, roomyB)) {
		t.Fatalf("module list: one roomy instance for both rooms wanted:\n%s", mods)
	}
	if lua := strings.Count(mods, "balls "); lua != 1 {
		t.Fatalf("module list: one Lua instance (room A's) wanted:\n%s", mods)
	}

	// Isolation, so far: nobody saw another room's ball or marker, echo
	// or chat.
	for _, rc := range []*roomClient{alice, bob} {
		for owner := range spawnOwners(rc) {
			if owner != 0 && owner != alice.id() && owner != bob.id() {
				t.Errorf("%s (room A) was sent an entity of client %d", rc.name, owner)
			}
		}
		if n := len(rc.all(1401)); n != 0 {
			t.Errorf("%s (room A) was sent %d echoes of the plugin rooms", rc.name, n)
		}
	}
	eventually(t, "dave's marker", func() bool { return spawnOwners(dave)[dave.id()] })
	for owner := range spawnOwners(dave) {
		if owner != dave.id() {
			t.Errorf("dave (room %d) was sent an entity of client %d", roomyA, owner)
		}
	}
	for _, m := range dave.all(1401) {
		if !strings.HasPrefix(echoText(m), fmt.Sprintf("room %d:", roomyA)) {
			t.Errorf("dave was sent another room's echo %q", echoText(m))
		}
	}
	chatTexts := func(rc *roomClient) []string {
		var texts []string
		for _, m := range rc.all(gamemsg.TypeChatMessage) {
			if c, err := gamemsg.ParseChatMessage(m.Payload); err == nil {
				texts = append(texts, c.Text)
			}
		}
		for _, m := range rc.all(gamemsg.TypeRoomChat) {
			if c, err := gamemsg.ParseRoomChat(m.Payload); err == nil {
				texts = append(texts, c.Text)
			}
		}
		return texts
	}
	for _, rc := range []*roomClient{alice, bob, carol, dave} {
		for _, text := range chatTexts(rc) {
			ok := text == "to everybody" || (text == "room a only" && rc == bob)
			if !ok {
				t.Errorf("%s was sent chat %q", rc.name, text)
			}
		}
	}

	// Owner rules, pause, ownership handed on.
	bob.refused(gamemsg.TypeRoomRename, gamemsg.AppendRoomRename(nil, &gamemsg.RoomRename{Name: "bob's"}), gamemsg.RoomNotOwner)
	bob.refused(gamemsg.TypeRoomStart, nil, gamemsg.RoomNotOwner)
	bob.refused(gamemsg.TypeRoomKick, gamemsg.AppendRoomKick(nil, &gamemsg.RoomKick{Client: alice.id()}), gamemsg.RoomNotOwner)
	bob.refused(gamemsg.TypeRoomPause, nil, gamemsg.RoomNotStarted)
	alice.ok(gamemsg.TypeRoomStart, nil)
	bob.event(gamemsg.RoomStarted, alice.id())
	bob.ok(gamemsg.TypeRoomPause, nil)
	if ev := alice.event(gamemsg.RoomPauseChanged, bob.id()); ev.Value != 1 || ev.Room != luaA {
		t.Fatalf("pause event %+v", ev)
	}
	dave.ok(gamemsg.TypeRoomStart, nil)
	dave.ok(gamemsg.TypeRoomPause, nil)
	eventually(t, "the plugin room told of its pause", func() bool {
		out, _ := srv.Exec("roomy_rooms @" + fmt.Sprint(roomyA))
		return strings.Contains(out, fmt.Sprintf("room %d pid", roomyA)) && strings.Contains(out, "paused true: dave") &&
			strings.Contains(out, "paused false: carol")
	})
	for _, m := range carol.all(gamemsg.TypeRoomEvent) {
		if ev, _ := gamemsg.ParseRoomEvent(m.Payload); ev.Kind == gamemsg.RoomPauseChanged {
			t.Errorf("carol was told of another room's pause: %+v", ev)
		}
	}
	alice.ok(gamemsg.TypeRoomLeave, nil)
	if ev := bob.event(gamemsg.RoomOwnerChanged, bob.id()); ev.Room != luaA {
		t.Fatalf("owner event %+v", ev)
	}
	bob.ok(gamemsg.TypeRoomRename, gamemsg.AppendRoomRename(nil, &gamemsg.RoomRename{Name: "bob's"}))
	if ev := bob.event(gamemsg.RoomRenamed, bob.id()); ev.Name != "bob's" {
		t.Fatalf("rename event %+v", ev)
	}

	// A module fault in one room: the plugin process dies; its rooms wait
	// for its restart, the Lua room plays on.
	if _, err := srv.Exec("roomy_exit @" + fmt.Sprint(roomyA)); err == nil {
		t.Fatal("roomy_exit answered")
	}
	bob.send(gamemsg.TypeRoomChat, gamemsg.AppendRoomChatRequest(nil, &gamemsg.RoomChat{Text: "still here"}))
	alice.ok(gamemsg.TypeRoomJoin, join(luaA)) // back in room A, under bob
	alice.await("a fresh ball spawn in room A after the crash", func(m netstack.Message) bool {
		sp, err := gamemsg.ParseEntitySpawn(m.Payload)
		return m.Header.Type == gamemsg.TypeEntitySpawn && err == nil && sp.Owner == alice.id()
	})
	eventually(t, "the plugin back, serving both rooms", func() bool {
		out, _ := srv.Exec("module info roomy")
		return strings.Contains(out, "state running") && strings.Contains(out, "restarted (attempt ")
	})
	dave.send(1400, hello("after"))
	dave.await("an echo after the restart", func(m netstack.Message) bool {
		return m.Header.Type == 1401 && echoText(m) == fmt.Sprintf("room %d: dave: after", roomyA)
	})

	// Admin: the list, a room's info, closing a room (its player back in
	// the lobby, told why).
	out, _ = srv.Exec("rooms")
	if !strings.Contains(out, `"bob's" mode entities`) || !strings.Contains(out, `"plugin a" mode roomy`) {
		t.Fatalf("rooms:\n%s", out)
	}
	info, _ := srv.Exec(fmt.Sprintf("room info %d", luaA))
	if !strings.Contains(info, fmt.Sprintf("%d bob (owner)", bob.id())) || !strings.Contains(info, "balls 1 [lua] running") {
		t.Fatalf("room info:\n%s", info)
	}
	if _, err := srv.Exec(fmt.Sprintf("room close %d", roomyB)); err != nil {
		t.Fatal(err)
	}
	if ev := carol.event(gamemsg.RoomClosed, 0); ev.Value != uint32(gamemsg.CloseAdmin) {
		t.Fatalf("closed event %+v", ev)
	}
	carol.ok(gamemsg.TypeRoomJoin, join(roomyA))
	m = carol.await("RoomState of dave's room", func(m netstack.Message) bool { return m.Header.Type == gamemsg.TypeRoomState })
	if rs, err := gamemsg.ParseRoomState(m.Payload); err != nil || rs.Room.ID != roomyA || rs.Owner != dave.id() || len(rs.Members) != 2 {
		t.Fatalf("RoomState %+v %v", rs, err)
	}
	dave.event(gamemsg.RoomJoined, carol.id())
}

// TestRoomPassword: a password room opens to a proof bound to the
// joiner's session, and to nothing else.
func TestRoomPassword(t *testing.T) {
	srv := startLobby(t, []string{"entities"}, nil, nil)
	alice, bob := newRoomClient(t, srv, "alice"), newRoomClient(t, srv, "bob")
	v, err := roomauth.NewVerifier("sesame", roomauth.MinIterations, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	room := alice.ok(gamemsg.TypeRoomCreate, gamemsg.AppendRoomCreate(nil, &gamemsg.RoomCreate{Name: "secret", Mode: "entities",
		Password: true, Salt: v.Salt, Iterations: v.Iterations, StoredKey: v.StoredKey}))
	bob.send(gamemsg.TypeRoomListRequest, gamemsg.AppendRoomListRequest(nil, &gamemsg.RoomListRequest{}))
	m := bob.await("RoomList", func(m netstack.Message) bool { return m.Header.Type == gamemsg.TypeRoomList })
	rl, _ := gamemsg.ParseRoomList(m.Payload)
	if len(rl.Rooms) != 1 || !rl.Rooms[0].Password || rl.Rooms[0].Salt != v.Salt || rl.Rooms[0].Iterations != v.Iterations {
		t.Fatalf("list %+v", rl)
	}
	bob.refused(gamemsg.TypeRoomJoin, join(room), gamemsg.RoomWrongPassword)
	stolen, _ := roomauth.Proof("sesame", v.Salt, v.Iterations, room, alice.c.ChannelBinding())
	bob.refused(gamemsg.TypeRoomJoin, gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: room, Proof: stolen[:]}), gamemsg.RoomWrongPassword)
	wrong, _ := roomauth.Proof("open", v.Salt, v.Iterations, room, bob.c.ChannelBinding())
	bob.refused(gamemsg.TypeRoomJoin, gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: room, Proof: wrong[:]}), gamemsg.RoomWrongPassword)
	good, _ := roomauth.Proof("sesame", v.Salt, v.Iterations, room, bob.c.ChannelBinding())
	bob.ok(gamemsg.TypeRoomJoin, gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: room, Proof: good[:]}))
	// A creation with iterations out of range is refused.
	bob.ok(gamemsg.TypeRoomLeave, nil)
	bob.refused(gamemsg.TypeRoomCreate, gamemsg.AppendRoomCreate(nil, &gamemsg.RoomCreate{Name: "weak", Mode: "entities",
		Password: true, Iterations: 1}), gamemsg.RoomBadRequest)
}

// TestOneMatchIsOneRoom: without a lobby every admitted client is in the
// server's one room, told so; the lobby's requests are refused with codes.
func TestOneMatchIsOneRoom(t *testing.T) {
	srv, _ := startHost(t, nil)
	alice := newRoomClient(t, srv, "alice")
	m := alice.await("RoomState", func(m netstack.Message) bool { return m.Header.Type == gamemsg.TypeRoomState })
	rs, err := gamemsg.ParseRoomState(m.Payload)
	if err != nil || rs.Room.ID != 1 || rs.Room.State != gamemsg.RoomPlaying || rs.Owner != 0 || len(rs.Members) != 1 || rs.Members[0].Name != "alice" {
		t.Fatalf("RoomState %+v %v", rs, err)
	}
	bob := newRoomClient(t, srv, "bob")
	alice.event(gamemsg.RoomJoined, bob.id())
	bob.refused(gamemsg.TypeRoomCreate, create("mine", "deathmatch", 0), gamemsg.RoomNotAllowed)
	bob.refused(gamemsg.TypeRoomJoin, join(1), gamemsg.RoomAlreadyInRoom)
	bob.refused(gamemsg.TypeRoomLeave, nil, gamemsg.RoomNotAllowed)
	bob.refused(gamemsg.TypeRoomPause, nil, gamemsg.RoomNotAllowed)
	bob.refused(gamemsg.TypeRoomRename, gamemsg.AppendRoomRename(nil, &gamemsg.RoomRename{Name: "x"}), gamemsg.RoomNotOwner)
	if out, err := srv.Exec("room pause 1"); err != nil || out != "paused room 1" {
		t.Fatalf("room pause 1: %q %v", out, err)
	}
	if ev := bob.event(gamemsg.RoomPauseChanged, 0); ev.Value != 1 {
		t.Fatalf("pause %+v", ev)
	}
	bob.c.Close()
	if ev := alice.event(gamemsg.RoomLeft, bob.id()); gamemsg.LeaveReason(ev.Value) != gamemsg.LeaveQuit {
		t.Fatalf("left %+v", ev)
	}
	if out, err := srv.Exec("room close 1"); err == nil {
		t.Fatalf("closed the server's one room: %q", out)
	}
}

// TestEnteringARoomInOrder: a client that creates a room of a mode whose
// module greets it at once receives, in order, its RoomResult, the room's
// RoomState and GameStateSync, then the module's greeting — and the table
// that announces the greeting's type before the greeting, so it never has
// to hold it (protocol.md §10.2, §13.8).
func TestEnteringARoomInOrder(t *testing.T) {
	srv := startLobby(t, []string{"greets"}, nil, nil)
	rc := newRoomClient(t, srv, "alice")
	rc.ok(gamemsg.TypeRoomCreate, create("hall", "greets", 4))
	rc.await("greets_hi", func(m netstack.Message) bool { return m.Header.Type == 1450 })
	rc.mu.Lock()
	var order []wire.MessageType
	for _, m := range rc.msgs {
		switch m.Header.Type {
		case gamemsg.TypeRoomResult, gamemsg.TypeRoomState, gamemsg.TypeGameStateSync, 1450:
			order = append(order, m.Header.Type)
		}
	}
	rc.mu.Unlock()
	want := []wire.MessageType{gamemsg.TypeGameStateSync, gamemsg.TypeRoomResult, gamemsg.TypeRoomState, gamemsg.TypeGameStateSync, 1450}
	if !slices.Equal(order, want) {
		t.Fatalf("received %v, want %v (admission's GameStateSync, then the room's messages)", order, want)
	}
	if st := rc.c.Stats(); st.HeldNotLoaded != 0 {
		t.Fatalf("the client held %d module messages that overtook their announcement", st.HeldNotLoaded)
	}
	if tbl, ok := rc.c.ModuleSchemas(); !ok || !slices.ContainsFunc(tbl.Types, func(s wire.ModuleSchema) bool { return s.ID == 1450 }) {
		t.Fatalf("the client's table %+v does not announce greets_hi", tbl)
	}
	// The Lua module's declared protocol (spark.module{protocol = 3,
	// oldest_protocol = 2}) is announced with it.
	if p, ok := rc.c.ModuleProtocols(); !ok || !slices.Contains(p.Modules, wire.ModuleProtocol{Module: "greets", Protocol: 3, Oldest: 2}) {
		t.Fatalf("module protocols announced: %+v", p)
	}
}
