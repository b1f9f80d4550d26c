package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/roomauth"
)

// player is a client over a real transport (UDP, WebTransport or
// WebSocket) that records everything it receives.
type player struct {
	t      *testing.T
	name   string
	c      *netstack.Client
	tr     *mutableTransport
	mu     sync.Mutex
	msgs   []netstack.Message
	cursor int
	more   chan struct{}
}

// playerRegistry knows the types the tag script and the deathmatch plugin
// send: a client must know every type a server sends it reliably.
func playerRegistry(t *testing.T) *wire.Registry {
	reg := gamemsg.NewRegistry()
	tag := []wire.Schema{
		{ID: 1400, Name: "tag_tag", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 4, MaxLen: 4, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		{ID: 1401, Name: "tag_state", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 9, MaxLen: 9, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		{ID: 1402, Name: "tag_announce", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 2, MaxLen: 202, StringFieldOffset: 0, RequiresAdmitted: true},
	}
	for _, s := range tag {
		if err := reg.Register("tag", s); err != nil {
			t.Fatal(err)
		}
	}
	echo := []wire.Schema{
		{ID: typeEchoIn, Name: "echo_in", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 2, MaxLen: 3002, StringFieldOffset: 0, RequiresAdmitted: true},
		{ID: typeEchoOut, Name: "echo_out", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 2, MaxLen: 3002, StringFieldOffset: 0, RequiresAdmitted: true},
	}
	for _, s := range echo {
		if err := reg.Register("echo", s); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range deathmatch.Schemas() {
		if err := reg.Register(deathmatch.Name, s); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// dialPlayer admits a player over the transport kind.
// The echo module's types (echoScript).
const (
	typeEchoIn  wire.MessageType = 1500
	typeEchoOut wire.MessageType = 1501
)

// echoPayload is an echo message: a NetBuffer string (u16 length, LE).
func echoPayload(text string) []byte {
	return append([]byte{byte(len(text)), byte(len(text) >> 8)}, text...)
}

func dialPlayer(t *testing.T, rs *runningServer, kind, name string) *player {
	t.Helper()
	tr, addr := openTransport(t, rs, kind)
	p := &player{t: t, name: name, tr: &mutableTransport{Transport: tr}, more: make(chan struct{}, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	p.c, _, err = client.Dial(ctx, netstack.ClientConfig{Server: addr, Name: name, Pin: rs.pin, Transport: p.tr, Registry: playerRegistry(t)})
	if err != nil {
		t.Fatalf("dial %s: %v", name, err)
	}
	t.Cleanup(func() { p.c.Close() })
	go func() {
		for {
			m, err := p.c.Receive(context.Background())
			if err != nil {
				return
			}
			m.Payload = slices.Clone(m.Payload)
			p.mu.Lock()
			p.msgs = append(p.msgs, m)
			p.mu.Unlock()
			select {
			case p.more <- struct{}{}:
			default:
			}
		}
	}()
	return p
}

func (p *player) id() uint32 { return p.c.ID() }

func (p *player) send(typ wire.MessageType, payload []byte) {
	p.t.Helper()
	ch := wire.ReliableOrdered
	if typ == gamemsg.TypeRoomChat || typ == gamemsg.TypeChatMessage || typ == typeEchoIn {
		ch = wire.Reliable
	}
	if err := p.c.Send(typ, ch, payload); err != nil {
		p.t.Fatalf("%s sends %v: %v", p.name, typ, err)
	}
}

// await returns the first message after the cursor that match accepts.
func (p *player) await(what string, match func(m netstack.Message) bool) netstack.Message {
	p.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		for i := p.cursor; i < len(p.msgs); i++ {
			if match(p.msgs[i]) {
				p.cursor = i + 1
				m := p.msgs[i]
				p.mu.Unlock()
				return m
			}
		}
		p.mu.Unlock()
		select {
		case <-p.more:
		case <-deadline:
			p.mu.Lock()
			got := make([]string, 0, len(p.msgs)-p.cursor)
			for _, m := range p.msgs[p.cursor:] {
				got = append(got, m.Header.Type.String())
			}
			p.mu.Unlock()
			p.t.Fatalf("%s: no %s within 30 s; received since the last match: %v", p.name, what, got)
		}
	}
}

// awaitEver is await over every message received so far, not only those
// after the last match: for what may have come before an answer awaited
// earlier (a body spawned while the room waited for its start). The
// cursor never moves back.
func (p *player) awaitEver(what string, match func(m netstack.Message) bool) netstack.Message {
	p.t.Helper()
	p.mu.Lock()
	cursor := p.cursor
	p.cursor = 0
	p.mu.Unlock()
	m := p.await(what, match)
	p.mu.Lock()
	p.cursor = max(p.cursor, cursor)
	p.mu.Unlock()
	return m
}

// request sends a room request and returns its answer.
func (p *player) request(typ wire.MessageType, payload []byte) gamemsg.RoomResult {
	p.t.Helper()
	p.send(typ, payload)
	m := p.await("the answer to "+typ.String(), func(m netstack.Message) bool {
		r, err := gamemsg.ParseRoomResult(m.Payload)
		return m.Header.Type == gamemsg.TypeRoomResult && err == nil && r.Request == typ
	})
	r, _ := gamemsg.ParseRoomResult(m.Payload)
	return r
}

func (p *player) ok(typ wire.MessageType, payload []byte) uint32 {
	p.t.Helper()
	r := p.request(typ, payload)
	if r.Code != gamemsg.RoomOK {
		p.t.Fatalf("%s: %v answered %v: %s", p.name, typ, r.Code, r.Detail)
	}
	return r.Room
}

func (p *player) refused(typ wire.MessageType, payload []byte, code gamemsg.RoomCode) {
	p.t.Helper()
	if r := p.request(typ, payload); r.Code != code {
		p.t.Fatalf("%s: %v answered %v (%s), want %v", p.name, typ, r.Code, r.Detail, code)
	}
}

func (p *player) event(kind gamemsg.RoomEventKind, client uint32) gamemsg.RoomEvent {
	p.t.Helper()
	m := p.await(fmt.Sprintf("RoomEvent %v of %d", kind, client), func(m netstack.Message) bool {
		ev, err := gamemsg.ParseRoomEvent(m.Payload)
		return m.Header.Type == gamemsg.TypeRoomEvent && err == nil && ev.Kind == kind && (client == 0 || ev.Client == client)
	})
	ev, _ := gamemsg.ParseRoomEvent(m.Payload)
	return ev
}

func (p *player) chat(text string) func(netstack.Message) bool {
	return func(m netstack.Message) bool {
		switch m.Header.Type {
		case gamemsg.TypeRoomChat:
			c, err := gamemsg.ParseRoomChat(m.Payload)
			return err == nil && c.Text == text
		case gamemsg.TypeChatMessage:
			c, err := gamemsg.ParseChatMessage(m.Payload)
			return err == nil && c.Text == text
		}
		return false
	}
}

// received reports whether any message so far matches.
func (p *player) received(match func(netstack.Message) bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.msgs, match)
}

func (p *player) spawnOf(owner uint32) func(netstack.Message) bool {
	return func(m netstack.Message) bool {
		sp, err := gamemsg.ParseEntitySpawn(m.Payload)
		return m.Header.Type == gamemsg.TypeEntitySpawn && err == nil && sp.Owner == owner
	}
}

func isType(t wire.MessageType) func(netstack.Message) bool {
	return func(m netstack.Message) bool { return m.Header.Type == t }
}

func roomEventOf(room uint32) func(netstack.Message) bool {
	return func(m netstack.Message) bool {
		ev, err := gamemsg.ParseRoomEvent(m.Payload)
		return m.Header.Type == gamemsg.TypeRoomEvent && err == nil && ev.Room == room
	}
}

func roomChatReq(scope gamemsg.ChatScope, text string) []byte {
	return gamemsg.AppendRoomChatRequest(nil, &gamemsg.RoomChat{Scope: scope, Text: text})
}

// TestProcessesRooms is rooms end to end with every part real: `sparkhost
// run --rooms` with a Lua mode (scripts/tag.lua, a Lua state per room) and
// deathmatch (a Go plugin subprocess), three players. Alice and
// bob play tag in one room while carol plays deathmatch in another:
// entities and chat never cross; the owner rules hold; the owner leaving
// hands the room on; pause reaches its room; the deathmatch plugin killed
// mid-game leaves the tag room playing and comes back; a player who stops
// answering times out and its room is told.
//
// It runs over each transport alike — UDP, WebTransport, WebSocket — to a
// server that serves all three; besides, a whole-server echo module
// answers a message larger than any web datagram (fragmented both ways),
// and a player closes and comes back.
func TestProcessesRooms(t *testing.T) {
	bin := buildBinary(t)
	for _, kind := range allTransports {
		t.Run(kind, func(t *testing.T) { playRooms(t, bin, kind) })
	}
}

// echoScript is a whole-server Lua module that sends a client back what it
// sent: up to 3,000 bytes, more than one datagram of any transport.
const echoScript = `spark.module{name = "echo", version = "1.0"}
local IN = spark.message{id = 1500, name = "echo_in", direction = "c2s", channel = "reliable",
  fields = {{"data", "str", 3000}}, requires_admitted = true}
local OUT = spark.message{id = 1501, name = "echo_out", direction = "s2c", channel = "reliable",
  fields = {{"data", "str", 3000}}}
spark.on_message(IN, function(client, reader)
  spark.send(client, OUT, spark.writer():str(reader:str()))
end)
`

func playRooms(t *testing.T, bin, kind string) {
	tmp := shortTempDir(t)
	cfg := filepath.Join(tmp, "config.toml")
	echo := filepath.Join(tmp, "echo.lua")
	if err := os.WriteFile(echo, []byte(echoScript), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("[server]\nclient_timeout = 3.0\nheartbeat_interval = 0.5\n\n[match]\nwarmup_seconds = 0.0\n\n"+
		"[rooms]\nempty_grace_seconds = 5.0\n\n[modules]\nload = ["+strconv.Quote(echo)+"]\n"+webConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..") // where scripts/tag.lua is
	if err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(tmp, "data")
	rs := startServerWeb(t, bin, root, dataDir, true, "--config", cfg, "--rooms", "--mode", "tag", "--mode", "deathmatch")
	alice, bob, carol := dialPlayer(t, rs, kind, "alice"), dialPlayer(t, rs, kind, "bob"), dialPlayer(t, rs, kind, "carol")

	// A module message larger than a datagram, fragmented both ways.
	big := strings.Repeat("0123456789", 290)
	carol.send(typeEchoIn, echoPayload(big))
	if got := carol.await("the echo", isType(typeEchoOut)).Payload; string(got) != string(echoPayload(big)) {
		t.Fatalf("echo of %d bytes came back as %d bytes", len(big), len(got))
	}

	alice.send(gamemsg.TypeRoomListRequest, gamemsg.AppendRoomListRequest(nil, &gamemsg.RoomListRequest{}))
	rl, _ := gamemsg.ParseRoomList(alice.await("the room list", isType(gamemsg.TypeRoomList)).Payload)
	if rl.Total != 0 || !slices.Equal(rl.Modes, []string{"tag", "deathmatch"}) {
		t.Fatalf("room list %+v", rl)
	}
	tagRoom := alice.ok(gamemsg.TypeRoomCreate, gamemsg.AppendRoomCreate(nil, &gamemsg.RoomCreate{Name: "tagroom", Mode: "tag", Capacity: 4}))
	bob.ok(gamemsg.TypeRoomJoin, gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: tagRoom}))
	alice.event(gamemsg.RoomJoined, bob.id())
	dmRoom := carol.ok(gamemsg.TypeRoomCreate, gamemsg.AppendRoomCreate(nil, &gamemsg.RoomCreate{Name: "dmroom", Mode: "deathmatch", Capacity: 4}))
	carol.ok(gamemsg.TypeRoomStart, nil)
	carol.awaitEver("carol's deathmatch body", carol.spawnOf(carol.id()))

	// Owner rules: bob owns nothing.
	bob.refused(gamemsg.TypeRoomRename, gamemsg.AppendRoomRename(nil, &gamemsg.RoomRename{Name: "mine"}), gamemsg.RoomNotOwner)
	bob.refused(gamemsg.TypeRoomStart, nil, gamemsg.RoomNotOwner)
	bob.refused(gamemsg.TypeRoomKick, gamemsg.AppendRoomKick(nil, &gamemsg.RoomKick{Client: alice.id()}), gamemsg.RoomNotOwner)
	alice.ok(gamemsg.TypeRoomStart, nil)
	bob.event(gamemsg.RoomStarted, alice.id())
	bob.await("tag's state: a round with two players", isType(1401))

	// Chat stays in its room; global chat reaches everybody.
	alice.send(gamemsg.TypeRoomChat, roomChatReq(gamemsg.ChatRoom, "tag players only"))
	bob.await("alice's room chat", bob.chat("tag players only"))
	carol.send(gamemsg.TypeChatMessage, gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: "deathmatch only"}))
	carol.send(gamemsg.TypeRoomChat, roomChatReq(gamemsg.ChatGlobal, "hello everyone"))
	alice.await("carol's global chat", alice.chat("hello everyone"))
	bob.await("carol's global chat", bob.chat("hello everyone"))

	// Pause reaches the room, and only it.
	bob.ok(gamemsg.TypeRoomPause, nil)
	if ev := alice.event(gamemsg.RoomPauseChanged, bob.id()); ev.Value != 1 || ev.Room != tagRoom {
		t.Fatalf("pause %+v", ev)
	}
	bob.ok(gamemsg.TypeRoomPause, nil)
	alice.event(gamemsg.RoomPauseChanged, bob.id())

	// The owner leaves: bob owns the room; alice comes back under him.
	alice.ok(gamemsg.TypeRoomLeave, nil)
	bob.event(gamemsg.RoomOwnerChanged, bob.id())
	bob.ok(gamemsg.TypeRoomRename, gamemsg.AppendRoomRename(nil, &gamemsg.RoomRename{Name: "bobs room"}))
	alice.ok(gamemsg.TypeRoomJoin, gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: tagRoom}))
	rs2, _ := gamemsg.ParseRoomState(alice.await("the room's state", isType(gamemsg.TypeRoomState)).Payload)
	if rs2.Owner != bob.id() || rs2.Room.Name != "bobs room" || len(rs2.Members) != 2 {
		t.Fatalf("room state %+v", rs2)
	}

	// The deathmatch plugin dies: the tag room plays on; deathmatch comes
	// back for carol.
	info := adminRun(t, bin, dataDir, "module", "info", "deathmatch")
	pid := regexp.MustCompile(`process (\d+)`).FindStringSubmatch(info)
	if pid == nil || !strings.Contains(info, fmt.Sprintf("rooms %d", dmRoom)) {
		t.Fatalf("module info deathmatch:\n%s", info)
	}
	n, _ := strconv.Atoi(pid[1])
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	alice.send(gamemsg.TypeRoomChat, roomChatReq(gamemsg.ChatRoom, "after the crash"))
	bob.await("alice's chat after the crash", bob.chat("after the crash"))
	bob.await("tag's state after the crash", isType(1401))
	if out := adminRun(t, bin, dataDir, "tag_status", fmt.Sprintf("@%d", tagRoom)); !strings.Contains(out, "2 players") {
		t.Fatalf("tag_status after the deathmatch crash:\n%s", out)
	}
	carol.await("carol's body from the restarted plugin", carol.spawnOf(carol.id()))
	if out := adminRun(t, bin, dataDir, "module", "info", "deathmatch"); !strings.Contains(out, "restarted (attempt ") {
		t.Fatalf("deathmatch not restarted:\n%s", out)
	}

	// Bob's machine hangs: the server times him out, the room is told and
	// alice owns it again.
	bob.tr.muted.Store(true)
	if ev := alice.event(gamemsg.RoomLeft, bob.id()); gamemsg.LeaveReason(ev.Value) != gamemsg.LeaveTimedOut {
		t.Fatalf("left %+v", ev)
	}
	alice.event(gamemsg.RoomOwnerChanged, alice.id())
	rooms := adminRun(t, bin, dataDir, "rooms")
	if !strings.Contains(rooms, fmt.Sprintf(`%d "bobs room" mode tag map arena players 1/4 playing owner %d`, tagRoom, alice.id())) ||
		!strings.Contains(rooms, fmt.Sprintf(`%d "dmroom" mode deathmatch`, dmRoom)) {
		t.Fatalf("rooms:\n%s", rooms)
	}

	// What never crossed between the rooms.
	for _, p := range []*player{alice, bob} {
		if p.received(isType(gamemsg.TypeEntitySpawn)) || p.received(isType(deathmatch.TypeMap)) {
			t.Errorf("%s (tag room) was sent deathmatch's entities or messages", p.name)
		}
		if p.received(p.chat("deathmatch only")) || p.received(roomEventOf(dmRoom)) {
			t.Errorf("%s (tag room) was sent the deathmatch room's chat or events", p.name)
		}
	}
	if carol.received(carol.chat("tag players only")) || carol.received(carol.chat("after the crash")) ||
		carol.received(roomEventOf(tagRoom)) || carol.received(isType(1401)) {
		t.Error("carol (deathmatch room) was sent the tag room's chat, events or messages")
	}

	// Carol closes and comes back: a new session, in the lobby, that sees
	// the rooms and is echoed.
	carol.c.Close()
	dave := dialPlayer(t, rs, kind, "carol again")
	dave.send(gamemsg.TypeRoomListRequest, gamemsg.AppendRoomListRequest(nil, &gamemsg.RoomListRequest{}))
	if rl, _ := gamemsg.ParseRoomList(dave.await("the room list after reconnecting", isType(gamemsg.TypeRoomList)).Payload); rl.Total == 0 {
		t.Fatalf("room list after reconnecting %+v", rl)
	}
	dave.send(typeEchoIn, echoPayload(big))
	dave.await("the echo after reconnecting", isType(typeEchoOut))

	// A room with a password: a wrong proof is refused; the right one,
	// bound to the joiner's own session (its channel binding), opens it.
	v, err := roomauth.NewVerifier("sesame", roomauth.MinIterations, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	secret := dave.ok(gamemsg.TypeRoomCreate, gamemsg.AppendRoomCreate(nil, &gamemsg.RoomCreate{Name: "secret", Mode: "tag", Capacity: 4,
		Password: true, Salt: v.Salt, Iterations: v.Iterations, StoredKey: v.StoredKey}))
	erin := dialPlayer(t, rs, kind, "erin")
	bad, _ := roomauth.Proof("open up", v.Salt, v.Iterations, secret, erin.c.ChannelBinding())
	erin.refused(gamemsg.TypeRoomJoin, gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: secret, Proof: bad[:]}), gamemsg.RoomWrongPassword)
	good, _ := roomauth.Proof("sesame", v.Salt, v.Iterations, secret, erin.c.ChannelBinding())
	if got := erin.ok(gamemsg.TypeRoomJoin, gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: secret, Proof: good[:]})); got != secret {
		t.Fatalf("joined room %d, want %d", got, secret)
	}
}
