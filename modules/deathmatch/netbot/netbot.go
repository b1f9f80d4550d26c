// Package netbot is the deathmatch bot as a network player: a Bot is a
// protocol v3 client (its own socket and sealed session) that plays on a
// real server, as `sparkhost bots` runs them and the module's tests and
// load benchmark do.
//
// Every tick of its own (the server's tick rate by default) a Bot reads
// what arrived: the replicated entities into its client.World, InputAck
// (reconciles the prediction), PlayerRespawn (restarts it at the spawn),
// the module's Map (the map to predict on; MatchStart and GameStateSync
// name it too), Frag, Hit and Team (its counters and its team). Then it takes the enemies from the World —
// the other players' bodies (deathmatch.PlayerEntityType) of another team,
// at their replicated position — asks the bot brain (modules/deathmatch/bot)
// for an input, predicts it with the server's movement code
// (client/predict) and sends it as ClientInput.
//
// A Bot draws enemies where the server last said they were; the server
// rewinds a shot by half the shooter's ping only, so against a moving
// target a bot aims a replication frame or so behind and misses some
// shots, as a human player without interpolation would.
//
// One goroutine runs a Bot (Run), or one goroutine runs many (Group);
// Stats may be read from any goroutine.
package netbot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/client/predict"
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/modules/deathmatch/bot"
	"github.com/sparkhost/sparkhost/modules/deathmatch/maps"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/movement"
)

// DefaultAimError is Config.AimError's default, in degrees.
const DefaultAimError = 1.5

// DialTimeout bounds one Dial when the context has no earlier deadline.
const DialTimeout = 20 * time.Second

// ErrDropped is what Run's error matches when the server ended the
// connection.
var ErrDropped = errors.New("netbot: dropped by the server")

// Config configures a Bot.
type Config struct {
	// Name is the player name (bot1, bot2, ... for `sparkhost bots`).
	Name string
	// Client is the connection: Server, and Pin or KnownHosts; its Name is
	// replaced by Name and a nil Registry by Registry().
	Client netstack.ClientConfig
	// Seed makes the bot's choices repeatable.
	Seed uint64
	// Maps are the server's maps; nil means the built-in ones. A map the
	// bot does not have is played as an open field (its prediction is
	// corrected by every InputAck).
	Maps *maps.Catalog
	// Rate is how many inputs a second the bot sends, 1..1000; 0 means
	// the server's tick rate (one input per tick, as §9.1 intends).
	Rate int
	// AimError in degrees, 0..45 (bot.Config.AimError); 0 means
	// DefaultAimError.
	AimError float32
	// Resume, when set, brings a connection whose path went dark back to
	// its seat (netstack.Client.Resume, or a wrapper that runs it where
	// the new socket must be opened); nil uses Client.Resume. It is tried
	// only with Client.Resumable set.
	Resume func(ctx context.Context, c *netstack.Client) (*netstack.Client, error)
	// Observe, when set, is called with every message the bot receives,
	// after the bot handled it, on the bot's goroutine.
	Observe func(netstack.Message)
	// OnInputAck, when set, is called on the bot's goroutine with the time
	// from sending an input to the first InputAck that covers it (an ack
	// of a later input covers the earlier ones it did not see acked).
	OnInputAck func(latency time.Duration)
}

// Stats counts what a Bot did and saw.
type Stats struct {
	Inputs   uint64 // ClientInputs sent
	Acks     uint64 // InputAcks reconciled
	Respawns uint64 // its PlayerRespawns
	// Firing counts the inputs sent with the fire button held; the server
	// fires at most once per weapon interval.
	Firing uint64
	Hits   uint64 // Hit messages with the bot as the attacker
	Kills  uint64 // Frags with the bot as the killer of an enemy
	Deaths uint64 // Frags with the bot as the victim (suicides too)
	// Sighted counts the ticks in which the bot knew of at least one
	// enemy body.
	Sighted uint64
	// MaxCorrection is the largest prediction correction, in units, while
	// the bot was alive (from its PlayerRespawn to its death or the end of
	// a round): a respawn is a teleport, not a misprediction, and the
	// server holds a dead player still while its inputs go on. A
	// correction counts a second after it was seen unless a message that
	// explains a jump (PlayerRespawn, MatchStart, MatchEnd, the map, the
	// bot's Frag) arrives meanwhile: the unreliable InputAck may overtake
	// it.
	MaxCorrection float32
	// Body is the entity id of the bot's body as its last PlayerRespawn
	// said (0 before the first).
	Body uint32
	// Resumed counts the times the bot came back to its seat after its
	// connection timed out.
	Resumed uint64
}

// Registry returns a registry with the deathmatch module's message types,
// for Config.Client.Registry.
func Registry() (*wire.Registry, error) {
	reg := gamemsg.NewRegistry()
	for _, s := range deathmatch.Schemas() {
		if err := reg.Register(deathmatch.Name, s); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// Bot is one network bot. Create it with Dial; run it with Run.
type Bot struct {
	cfg    Config
	conn   atomic.Pointer[netstack.Client] // replaced by a resumption (resume.go)
	world  *client.World
	period time.Duration

	brain    *bot.Brain
	pred     *predict.Predictor
	mapName  string
	tickRate int
	seq      uint32 // last input sent
	firstSeq uint32 // the current Predictor's first input
	team     uint32 // from its body's team field or a Team message
	alive    bool   // from its PlayerRespawn to its death or a round's end
	bodies   []body // scratch of findEnemies
	enemies  []bot.Enemy
	buf      []byte
	sentAt   [inputRing]time.Time // send time of input seq, by seq % inputRing
	acked    uint32               // the highest input seq an InputAck covered

	mu sync.Mutex
	st Stats
	// A correction is final a second after it was seen (settleAfter): an
	// InputAck is unreliable and may overtake the ordered message that
	// explains a jump of the bot's body (its PlayerRespawn, a MatchStart,
	// its Frag), so a correction seen just before such a message is the
	// teleport seen early and is dropped. pending is the largest
	// correction not yet final, since pendingAt (zero: none).
	pending   float32
	pendingAt time.Time
}

// inputRing is how many inputs' send times a bot remembers for OnInputAck.
const inputRing = 256

// settleAfter is how long a correction waits before it counts.
const settleAfter = time.Second

// Dial connects a bot to the server and sets it up on the server's map.
func Dial(ctx context.Context, cfg Config) (*Bot, error) {
	if cfg.Maps == nil {
		var err error
		if cfg.Maps, err = maps.Builtin(); err != nil {
			return nil, err
		}
	}
	if cfg.AimError == 0 {
		cfg.AimError = DefaultAimError
	}
	if cfg.Rate < 0 || cfg.Rate > movement.MaxTickRate {
		return nil, fmt.Errorf("netbot: Rate %d outside 0..%d", cfg.Rate, movement.MaxTickRate)
	}
	cc := cfg.Client
	cc.Name = cfg.Name
	if cc.Registry == nil {
		var err error
		if cc.Registry, err = Registry(); err != nil {
			return nil, err
		}
	}
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	c, gss, err := client.Dial(dctx, cc)
	if err != nil {
		return nil, err
	}
	b := &Bot{cfg: cfg, world: client.NewWorld()}
	b.conn.Store(c)
	b.tickRate = max(int(gss.TickRate), 1)
	rate := cfg.Rate
	if rate == 0 {
		rate = b.tickRate
	}
	b.period = time.Second / time.Duration(rate)
	if err := b.setMap(gss.Map); err != nil {
		c.Close()
		return nil, err
	}
	return b, nil
}

// ErrRoomRefused is what EnterRoom's error matches when the server
// answered the request with a code other than OK.
var ErrRoomRefused = errors.New("netbot: room request refused")

// EnterRoom puts the bot in a room of a server with a lobby
// (docs/protocol.md §13): it sends a RoomCreate or RoomJoin payload of type
// t and waits for its answer, handling what arrives meanwhile, and returns
// the room's id. Call it after Dial and before Run. The room's
// GameStateSync, which follows the answer, tells the bot the room's map.
func (b *Bot) EnterRoom(ctx context.Context, t wire.MessageType, payload []byte) (uint32, error) {
	if err := b.client().Send(t, wire.ReliableOrdered, payload); err != nil {
		return 0, err
	}
	for {
		m, err := b.client().Receive(ctx)
		if err != nil {
			return 0, err
		}
		b.handle(m)
		if m.Header.Type != gamemsg.TypeRoomResult {
			continue
		}
		r, err := gamemsg.ParseRoomResult(m.Payload)
		if err != nil || r.Request != t {
			continue
		}
		if r.Code != gamemsg.RoomOK {
			return r.Room, fmt.Errorf("%w: %s %s: %s", ErrRoomRefused, t, r.Code, r.Detail)
		}
		return r.Room, nil
	}
}

// ID is the bot's client id.
func (b *Bot) ID() uint32 { return b.client().ID() }

// Name is the bot's player name.
func (b *Bot) Name() string { return b.cfg.Name }

// World is the bot's picture of the replicated entities.
func (b *Bot) World() *client.World { return b.world }

// Stats returns the counters; safe from any goroutine.
func (b *Bot) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settleLocked(time.Now())
	return b.st
}

// settleLocked makes the pending correction final once it has waited
// settleAfter (under b.mu).
func (b *Bot) settleLocked(now time.Time) {
	if !b.pendingAt.IsZero() && now.Sub(b.pendingAt) >= settleAfter {
		b.st.MaxCorrection = max(b.st.MaxCorrection, b.pending)
		b.dropPendingLocked()
	}
}

// teleported drops the pending correction: the message just received
// explains it.
func (b *Bot) teleported() {
	b.mu.Lock()
	b.dropPendingLocked()
	b.mu.Unlock()
}

// dropPendingLocked forgets the correction not yet final (under b.mu).
func (b *Bot) dropPendingLocked() { b.pending, b.pendingAt = 0, time.Time{} }

// NetStats returns the connection's statistics (ping, loss, traffic).
func (b *Bot) NetStats() netstack.Stats { return b.client().Stats() }

// observeAck reports the latency of the newest input an InputAck covers
// for the first time (OnInputAck).
func (b *Bot) observeAck(seq uint32) {
	if int32(seq-b.acked) <= 0 || int32(b.seq-seq) < 0 || b.seq-seq >= inputRing {
		return
	}
	b.acked = seq
	if t := b.sentAt[seq%inputRing]; b.cfg.OnInputAck != nil && !t.IsZero() {
		b.cfg.OnInputAck(time.Since(t))
	}
}

// Close leaves the server (ClientQuit); Run returns nil after it.
func (b *Bot) Close() error { return b.client().Close() }

// Run plays until ctx ends, then leaves with ClientQuit and returns nil; if
// the server ends the connection first it returns an error matching
// ErrDropped with the reason. A Group plays many bots on one goroutine
// instead.
func (b *Bot) Run(ctx context.Context) error {
	ticker := time.NewTicker(b.period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			b.client().Close()
			return nil
		case <-b.client().Done():
			if b.resume(ctx) {
				continue // the same seat on a new connection
			}
			return b.dropped()
		case <-ticker.C:
		}
		b.turn()
	}
}

// dropped is Run's error once the connection ended and was not resumed:
// nil after a Close from another goroutine.
func (b *Bot) dropped() error {
	reason, detail := b.client().CloseReason()
	if reason == wire.DisconnectClientQuit {
		return nil
	}
	return fmt.Errorf("%w: %s (%s)", ErrDropped, reason, detail)
}

// noWait is a cancelled context: Receive with it returns at once when
// nothing is queued.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// turn is one of the bot's ticks: it handles what arrived and sends its
// next input.
func (b *Bot) turn() {
	for {
		msg, err := b.client().Receive(noWait)
		if err != nil {
			break
		}
		b.handle(msg)
		if b.cfg.Observe != nil {
			b.cfg.Observe(msg)
		}
	}
	b.step()
}

// setMap switches the bot to the named map.
func (b *Bot) setMap(name string) error {
	m, ok := b.cfg.Maps.Get(name)
	if !ok {
		m = openField(name)
	}
	w, err := m.World(movement.Params{TickRate: b.tickRate})
	if err != nil {
		return err
	}
	if b.brain == nil {
		b.brain, err = bot.New(bot.Config{Seed: b.cfg.Seed, Map: m, TickRate: b.tickRate, AimError: b.cfg.AimError})
		if err != nil {
			return err
		}
	} else {
		b.brain.SetMap(m)
	}
	start := movement.State{Position: m.Spawns[0].Position, Yaw: m.Spawns[0].Yaw}
	b.firstSeq = b.seq + 1
	if b.pred, err = predict.New(w, start, predict.Config{FirstSeq: b.firstSeq}); err != nil {
		return err
	}
	b.mapName = name
	return nil
}

func openField(name string) *maps.Map {
	return &maps.Map{
		Name:   name,
		Bounds: movement.Box{Min: wire.Vec3{X: -1000, Y: -100, Z: -1000}, Max: wire.Vec3{X: 1000, Y: 100, Z: 1000}},
		Spawns: []maps.Spawn{{}},
	}
}

// step sends the next input: the brain's, given the enemies in the World.
func (b *Bot) step() {
	b.findEnemies(b.client().ID())
	in, err := b.pred.Predict(b.brain.Think(b.pred.State(), b.enemies))
	if err != nil {
		return // cannot happen: the brain's inputs are valid
	}
	b.seq = in.InputSeq
	b.buf = gamemsg.AppendClientInput(b.buf[:0], &in)
	if b.client().Send(gamemsg.TypeClientInput, wire.Unreliable, b.buf) != nil {
		return
	}
	if b.cfg.Client.FlushInterval >= 0 { // negative: Send wrote it already
		b.client().Flush() // this frame's input leaves now, with the acks the bot owes
	}
	b.sentAt[in.InputSeq%inputRing] = time.Now()
	b.mu.Lock()
	b.st.Inputs++
	if in.Buttons&gamemsg.ButtonFire != 0 {
		b.st.Firing++
	}
	if len(b.enemies) > 0 {
		b.st.Sighted++
	}
	b.mu.Unlock()
}

// findEnemies fills b.enemies from the World: every player body but the
// own (client me's), of another team when there are teams (team 0 is
// free-for-all). The own body tells the bot its team.
func (b *Bot) findEnemies(me uint32) {
	b.bodies = b.bodies[:0]
	b.world.Range(func(e *client.Entity) bool {
		if e.Type != deathmatch.PlayerEntityType {
			return true
		}
		team, _ := e.Field("team")
		if e.Owner == me {
			b.team = team.Uint
		} else if pos, ok := e.Position(); ok {
			b.bodies = append(b.bodies, body{bot.Enemy{ID: e.ID, Position: pos}, team.Uint})
		}
		return true
	})
	b.enemies = b.enemies[:0]
	for _, o := range b.bodies {
		if b.team == 0 || o.team != b.team {
			b.enemies = append(b.enemies, o.Enemy)
		}
	}
}

// body is another player's body as the World has it.
type body struct {
	bot.Enemy
	team uint32
}

func (b *Bot) handle(m netstack.Message) {
	ch, err := b.world.ApplyChange(m)
	if err != nil {
		return // malformed for its schema: counted by the World
	}
	p := m.Payload
	switch m.Header.Type {
	case gamemsg.TypeInputAck:
		ack, err := gamemsg.ParseInputAck(p)
		// An ack of an input sent before a map change reaches the new
		// Predictor, which never sent it: skip it.
		if err != nil || int32(ack.LastInputSeq-b.firstSeq) < 0 {
			return
		}
		b.observeAck(ack.LastInputSeq)
		if ok, _ := b.pred.Reconcile(ack); ok {
			b.mu.Lock()
			b.st.Acks++
			if now := time.Now(); b.alive {
				b.settleLocked(now)
				if c := b.pred.LastCorrection(); c > 0 {
					b.pending = max(b.pending, c)
					if b.pendingAt.IsZero() {
						b.pendingAt = now
					}
				}
			}
			b.mu.Unlock()
		}
	case gamemsg.TypePlayerRespawn:
		r, err := gamemsg.ParsePlayerRespawn(p)
		if err == nil && r.Client == b.client().ID() {
			_ = b.pred.Reset(movement.State{Position: r.Position, Yaw: r.Yaw}) // finite: the parser checked
			b.alive = true
			b.teleported()
			b.mu.Lock()
			b.st.Respawns++
			b.st.Body = r.EntityID
			b.mu.Unlock()
		}
	case gamemsg.TypeMatchStart:
		b.alive = false // every round starts with a respawn
		b.teleported()
		if ms, err := gamemsg.ParseMatchStart(p); err == nil && ms.Map != b.mapName {
			_ = b.setMap(ms.Map)
		}
	case gamemsg.TypeMatchEnd:
		b.alive = false // the next map starts with a respawn
		b.teleported()
	case gamemsg.TypeGameStateSync:
		if ch.Sync.Map != b.mapName { // the World parsed it
			_ = b.setMap(ch.Sync.Map)
		}
	case deathmatch.TypeMap:
		if name, err := deathmatch.ParseMap(p); err == nil && name != b.mapName {
			b.alive = false // a respawn on the new map follows
			b.teleported()
			_ = b.setMap(name)
		}
	case deathmatch.TypeTeam:
		if c, team, err := deathmatch.ParseTeam(p); err == nil && c == b.client().ID() {
			b.team = uint32(team)
		}
	case deathmatch.TypeHit:
		if h, err := deathmatch.ParseHit(p); err == nil && h.Attacker == b.client().ID() && h.Victim != h.Attacker {
			b.mu.Lock()
			b.st.Hits++
			b.mu.Unlock()
		}
	case deathmatch.TypeFrag:
		f, err := deathmatch.ParseFrag(p)
		b.mu.Lock()
		switch {
		case err != nil:
		case f.Victim == b.client().ID():
			b.st.Deaths++
			b.alive = false
			b.dropPendingLocked() // held still from its death on
		case f.Killer == b.client().ID() && f.Flags == 0:
			b.st.Kills++
		}
		b.mu.Unlock()
	}
}
