package main

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/internal/v3strict"
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// strictConfig is one server configuration the strict v3 client plays on.
type strictConfig struct {
	name    string
	args    []string
	modules []wire.Schema
	match   bool // the server runs a match: MatchStart and ScoreUpdate come
	mmo     bool // the mmo module answers a module request
	rooms   bool // a lobby of rooms: v3 clients are refused
}

// TestProcessesStrictV3Client holds a real `sparkhost run` to the frozen
// v3 contract with a client written from it alone (internal/v3strict): in
// each configuration it checks the refusals (protocol too old and too new,
// a v1 packet, an invalid name, a full server), two admitted clients'
// heartbeats both ways, chat relay, ordered delivery with contiguous
// OrderedSequences (GameStateSync first, then the match's and the
// module's messages), that malformed reliable packets — a v4 type among
// them — are dropped unacknowledged and unanswered, a client's quit and
// the server's shutdown. The client fails on any message, channel, size or
// ordering v3 does not allow. A lobby of rooms cannot serve v3 clients
// (they cannot send the room requests): there v3 is refused with a clear
// ConnectRejected.
func TestProcessesStrictV3Client(t *testing.T) {
	bin := buildBinary(t)
	configs := []strictConfig{
		{name: "plain", match: true},
		{name: "deathmatch", args: []string{"--module", "deathmatch"}, modules: deathmatch.Schemas(), match: true},
		{name: "mmo", args: []string{"--module", "mmo"}, modules: mmoproto.Schemas(), mmo: true},
		{name: "rooms", args: []string{"--rooms", "--mode", "deathmatch"}, modules: deathmatch.Schemas(), rooms: true},
	}
	for _, sc := range configs {
		t.Run(sc.name, func(t *testing.T) { playStrictV3(t, bin, sc) })
	}
}

// strictRules turns module schemas into the strict client's rules: what a
// v3 client is told about a module's types (ids, direction, channel, size
// bounds and string offset; never the typed fields of v4).
func strictRules(schemas []wire.Schema) []v3strict.Rule {
	var out []v3strict.Rule
	for _, s := range schemas {
		r := v3strict.Rule{ID: uint16(s.ID), Name: s.Name, Channel: v3strict.Channel(s.Channel), Min: s.MinLen, Max: s.MaxLen, StringOffset: s.StringFieldOffset}
		if s.Direction&wire.ClientToServer != 0 {
			r.Dir |= v3strict.ToServer
		}
		if s.Direction&wire.ServerToClient != 0 {
			r.Dir |= v3strict.ToClient
		}
		out = append(out, r)
	}
	return out
}

func playStrictV3(t *testing.T, bin string, sc strictConfig) {
	tmp := shortTempDir(t)
	dataDir := filepath.Join(tmp, "data")
	cfg := filepath.Join(tmp, "config.toml")
	if err := os.WriteFile(cfg, []byte("[match]\nwarmup_seconds = 1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs := startServer(t, bin, dataDir, append([]string{"--config", cfg, "--max-clients", "2"}, sc.args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dial := func(name string, version uint16) (*v3strict.Client, error) {
		return v3strict.Dial(ctx, v3strict.Config{Server: rs.addr, Name: name, Pin: rs.pin, Version: version, Modules: strictRules(sc.modules)})
	}

	oldVersion := uint16(3) // refusals answer v3 clients with the version they speak
	if sc.rooms {
		oldVersion = 4 // ... unless the server refuses v3
	}
	expectRejected(t, "a v2 hello", v3strict.RejectProtocolTooOld, oldVersion, dialErr(dial("old", 2)))
	expectRejected(t, "a v5 hello", v3strict.RejectProtocolTooNew, 4, dialErr(dial("new", 5)))
	legacy, err := v3strict.ProbeLegacy(ctx, rs.addr)
	if err == nil {
		err = legacy
	}
	expectRejected(t, "a v1 packet", v3strict.RejectProtocolTooOld, oldVersion, err)
	if sc.rooms {
		rej := expectRejected(t, "a v3 hello to a lobby of rooms", v3strict.RejectProtocolTooOld, 4, dialErr(dial("alice", 3)))
		if !strings.Contains(rej.Detail, "rooms") || !strings.Contains(rej.Detail, "v4") {
			t.Errorf("the refusal does not say why: %q", rej.Detail)
		}
		return
	}
	if c, err := dial(" \t", 3); !isDisconnect(err, v3strict.DisconnectNameInvalid) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("an all-white-space name: %v, want Disconnect(NameInvalid)", err)
	}

	alice, bob := admitStrict(t, dial, "alice"), admitStrict(t, dial, "bob")
	expectRejected(t, "a third client (max-clients 2)", v3strict.RejectServerFull, 3, dialErr(dial("carol", 3)))

	// Malformed reliable packets — a v4 type (RoomListRequest), a type no
	// version defines, a chat with a sender — are dropped unacknowledged
	// and unanswered; the chat after them is relayed and acknowledged.
	alice.c.SendProbe(32, v3strict.Reliable, []byte{0, 0})
	alice.c.SendProbe(999, v3strict.Reliable, []byte{1, 2, 3})
	alice.c.SendProbe(v3strict.TypeChatMessage, v3strict.Reliable, append([]byte{2, 0, 'm', 'e'}, 2, 0, 'h', 'i'))
	if err := alice.c.SendChat("hello bob"); err != nil {
		t.Fatal(err)
	}
	bob.waitChat(t, "alice", "hello bob")
	if err := bob.c.SendChat("hi alice"); err != nil {
		t.Fatal(err)
	}
	alice.waitChat(t, "bob", "hi alice")

	for _, p := range []*strictPlayer{alice, bob} {
		p.play(t, sc)
	}
	for _, p := range []*strictPlayer{alice, bob} {
		p.waitHeartbeats(t)
		if err := p.c.WaitAcked(ctx); err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
	}
	if out := adminRun(t, bin, dataDir, "players"); !strings.Contains(out, "alice") || !strings.Contains(out, "bob") {
		t.Fatalf("admin players:\n%s", out)
	}

	alice.c.Close()
	eventuallyE2E(t, "alice's quit reaches the server", func() bool {
		return !strings.Contains(adminRun(t, bin, dataDir, "players"), "alice")
	})
	if err := rs.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-bob.c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("bob was not told of the shutdown")
	}
	if d := bob.c.Disconnected(); d == nil || d.Reason != v3strict.DisconnectServerShutdown {
		t.Errorf("bob's disconnect: %v, want ServerShutdown", d)
	}
	for _, p := range []*strictPlayer{alice, bob} {
		p.checkOrdered(t)
		if err := p.c.Check(); err != nil {
			t.Errorf("%s broke the v3 contract:\n%v", p.name, err)
		}
	}
}

// dialErr closes a client that should not have been admitted and returns
// the Dial's error (nil when it was admitted).
func dialErr(c *v3strict.Client, err error) error {
	if c != nil {
		c.Close()
	}
	return err
}

// expectRejected requires err to be a ConnectRejected with reason and
// server_version.
func expectRejected(t *testing.T, what string, reason uint8, version uint16, err error) *v3strict.RejectedError {
	t.Helper()
	var rej *v3strict.RejectedError
	if !errors.As(err, &rej) || rej.Reason != reason || rej.ServerVersion != version {
		t.Fatalf("%s: %v, want ConnectRejected reason %d, server_version %d", what, err, reason, version)
	}
	return rej
}

func isDisconnect(err error, reason uint8) bool {
	var d *v3strict.DisconnectedError
	return errors.As(err, &d) && d.Reason == reason
}

func eventuallyE2E(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 20 s", what)
}

// strictPlayer is a strict client whose delivered messages are recorded.
type strictPlayer struct {
	name string
	c    *v3strict.Client
	mu   sync.Mutex
	msgs []v3strict.Message
}

func admitStrict(t *testing.T, dial func(string, uint16) (*v3strict.Client, error), name string) *strictPlayer {
	t.Helper()
	c, err := dial(name, 3)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	p := &strictPlayer{name: name, c: c}
	t.Cleanup(c.Close)
	go func() {
		for {
			m, err := c.Next(context.Background())
			if err != nil {
				return
			}
			p.mu.Lock()
			p.msgs = append(p.msgs, m)
			p.mu.Unlock()
		}
	}()
	return p
}

// waitMsg waits for a delivered message that pred accepts.
func (p *strictPlayer) waitMsg(t *testing.T, what string, pred func(v3strict.Message) bool) v3strict.Message {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		p.mu.Lock()
		for _, m := range p.msgs {
			if pred(m) {
				p.mu.Unlock()
				return m
			}
		}
		p.mu.Unlock()
		if err := p.c.Err(); err != nil {
			t.Fatalf("%s broke the v3 contract while waiting for %s:\n%v", p.name, what, err)
		}
	}
	t.Fatalf("%s: no %s within 20 s (violations: %v)", p.name, what, p.c.Err())
	return v3strict.Message{}
}

func ofType(typ uint16) func(v3strict.Message) bool {
	return func(m v3strict.Message) bool { return m.Type == typ }
}

func (p *strictPlayer) waitChat(t *testing.T, from, text string) {
	t.Helper()
	want := append(binary.LittleEndian.AppendUint16(nil, uint16(len(from))), from...)
	want = append(binary.LittleEndian.AppendUint16(want, uint16(len(text))), text...)
	p.waitMsg(t, "chat "+text, func(m v3strict.Message) bool {
		return m.Type == v3strict.TypeChatMessage && string(m.Payload) == string(want)
	})
}

// play runs a few seconds of the configuration's game: inputs every tick
// of 50 ms, the match's ordered messages, the module's answer.
func (p *strictPlayer) play(t *testing.T, sc strictConfig) {
	t.Helper()
	p.waitMsg(t, "GameStateSync", ofType(v3strict.TypeGameStateSync))
	if sc.mmo {
		req := binary.LittleEndian.AppendUint32(nil, 1)
		if err := p.c.Send(uint16(mmoproto.TypeCharacterListRequest), req); err != nil {
			t.Fatal(err)
		}
		p.waitMsg(t, "the mmo's answer", func(m v3strict.Message) bool {
			return m.Type == uint16(mmoproto.TypeResult) || m.Type == uint16(mmoproto.TypeCharacterList)
		})
	}
	for i := range 40 {
		if err := p.c.Send(v3strict.TypeClientInput, clientInput(uint32(i+1))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if sc.match {
		p.waitMsg(t, "MatchStart", ofType(v3strict.TypeMatchStart))
		p.waitMsg(t, "ScoreUpdate", ofType(v3strict.TypeScoreUpdate))
	}
}

// clientInput is a ClientInput (§9.1): forward, a little turn, dt 50 ms.
func clientInput(seq uint32) []byte {
	p := binary.LittleEndian.AppendUint32(nil, seq)
	for _, f := range []float32{1, 0, float32(seq), 0} {
		p = binary.LittleEndian.AppendUint32(p, math.Float32bits(f))
	}
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint32(p, math.Float32bits(0.05))
	return binary.LittleEndian.AppendUint32(p, math.Float32bits(float32(seq)*0.05))
}

func (p *strictPlayer) waitHeartbeats(t *testing.T) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if st := p.c.Stats(); st.ServerHeartbeats >= 2 && st.Echoes >= 2 {
			t.Logf("%s: %d heartbeats from the server, %d echoes of ours (slowest %v)", p.name, st.ServerHeartbeats, st.Echoes, st.SlowestEcho)
			return
		}
	}
	st := p.c.Stats()
	t.Fatalf("%s: %d heartbeats from the server, %d echoes of ours", p.name, st.ServerHeartbeats, st.Echoes)
}

// checkOrdered: the ordered messages were delivered with OrderedSequence
// 1, 2, 3, … and GameStateSync first.
func (p *strictPlayer) checkOrdered(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	next := uint32(1)
	var types []string
	for _, m := range p.msgs {
		if m.Channel != v3strict.ReliableOrdered {
			continue
		}
		if m.Ordered != next {
			t.Errorf("%s: ordered message %s has OrderedSequence %d where %d is due", p.name, v3strict.TypeName(m.Type), m.Ordered, next)
		}
		next = m.Ordered + 1
		types = append(types, v3strict.TypeName(m.Type))
	}
	if len(types) == 0 || types[0] != "GameStateSync" {
		t.Errorf("%s: ordered stream %v does not start with GameStateSync", p.name, types)
	}
	t.Logf("%s: ordered stream %v", p.name, types)
}
