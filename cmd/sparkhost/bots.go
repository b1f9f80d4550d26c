package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sparkhost/sparkhost/client/predict"
	"github.com/sparkhost/sparkhost/host/movement"
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/modules/deathmatch/bot"
	"github.com/sparkhost/sparkhost/modules/deathmatch/maps"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

const botsUsage = `usage: sparkhost bots --count N --server HOST:PORT [--pin PIN] [--data-dir DIR]
                     [--duration D] [--seed S] [--rate HZ] [--maps-dir DIR]

Runs N headless deathmatch players, named bot1 … botN, in this process, for
tests and load. Each bot is its own protocol v3 client (its own socket and
session). Every tick it asks the bot brain (modules/deathmatch/bot) for an
input — wander the map, aim at the nearest enemy in sight, fire when aimed —
predicts it with the server's movement code (client/predict) and sends it
as ClientInput; InputAck reconciles the prediction, PlayerRespawn restarts
it at the spawn, MatchStart and GameStateSync say which map is played.
Bots do not see other players until the server replicates them: until then
they wander and never fire.

flags:
  --count N         bots to run, 1..1024 (required)
  --server ADDR     the server's IPv4 address and port, e.g. 127.0.0.1:27015 (required)
  --pin PIN         accept only this server identity (ed25519:...); without it
                    known_hosts in --data-dir decides, trusting a new server on first use
  --data-dir DIR    holds known_hosts (default: the user config dir + /sparkhost)
  --duration D      stop after D, e.g. 30s (default: until interrupted)
  --seed S          seed of the bots' choices; the same seed, the same bots (default 1)
  --rate HZ         inputs per second per bot, 1..1000; 0 = the server's tick rate (default 0)
  --maps-dir DIR    the server's maps, when they are not the built-in ones

Bots connect one after another (the server's Connect budget per address
allows bursts of connect_burst, then connect_refill_per_second) and each
plays from the moment it is in; --duration counts from the start. At the end one line per bot gives its
inputs sent, InputAcks, respawns, kills, deaths and largest prediction
correction. The exit code is 0 when every bot connected and stayed
connected until the end, 1 otherwise, 2 for bad flags.
`

const maxBots = 1024

// botsOptions are the parsed flags.
type botsOptions struct {
	count    int
	server   netip.AddrPort
	pin      string
	dataDir  string
	duration time.Duration
	seed     uint64
	rate     int
	mapsDir  string
}

// botsCommand runs `sparkhost bots`.
func botsCommand(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runBots(ctx, args, os.Stdout, os.Stderr)
}

func parseBotsFlags(args []string, stdout, stderr io.Writer) (botsOptions, int, bool) {
	fs := flag.NewFlagSet("bots", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o botsOptions
	var server string
	fs.IntVar(&o.count, "count", 0, "")
	fs.StringVar(&server, "server", "", "")
	fs.StringVar(&o.pin, "pin", "", "")
	fs.StringVar(&o.dataDir, "data-dir", "", "")
	fs.DurationVar(&o.duration, "duration", 0, "")
	fs.Uint64Var(&o.seed, "seed", 1, "")
	fs.IntVar(&o.rate, "rate", 0, "")
	fs.StringVar(&o.mapsDir, "maps-dir", "", "")
	fail := func(format string, a ...any) (botsOptions, int, bool) {
		fmt.Fprintf(stderr, "sparkhost bots: "+format+"\n\n%s", append(a, botsUsage)...)
		return o, 2, false
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, botsUsage)
			return o, 0, false
		}
		return fail("%v", err)
	}
	switch {
	case fs.NArg() > 0:
		return fail("unexpected argument %q", fs.Arg(0))
	case !flagSet(fs, "count"):
		return fail("--count is required")
	case o.count < 1 || o.count > maxBots:
		return fail("--count %d: want 1..%d", o.count, maxBots)
	case server == "":
		return fail("--server is required")
	case o.duration < 0:
		return fail("--duration %v is negative", o.duration)
	case o.rate < 0 || o.rate > movement.MaxTickRate:
		return fail("--rate %d: want 0..%d", o.rate, movement.MaxTickRate)
	}
	ap, err := netip.ParseAddrPort(server)
	if err != nil || !ap.Addr().Unmap().Is4() || ap.Port() == 0 {
		return fail("--server %q: want an IPv4 address and port, e.g. 127.0.0.1:27015", server)
	}
	o.server = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if o.pin != "" {
		if _, err := trust.ParsePin(o.pin); err != nil {
			return fail("--pin: %v", err)
		}
	}
	return o, 0, true
}

// runBots is botsCommand with its context and streams injected for tests.
func runBots(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code, ok := parseBotsFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	catalog, err := botMaps(o.mapsDir)
	if err != nil {
		fmt.Fprintf(stderr, "sparkhost bots: %v\n", err)
		return 1
	}
	base := netstack.ClientConfig{Server: o.server, Pin: o.pin, Registry: wire.NewRegistry()}
	for _, s := range deathmatch.Schemas() {
		if err := base.Registry.Register(deathmatch.Name, s); err != nil {
			fmt.Fprintf(stderr, "sparkhost bots: %v\n", err)
			return 1
		}
	}
	if o.pin == "" {
		dir, err := clientDataDir(o.dataDir)
		if err != nil {
			fmt.Fprintf(stderr, "sparkhost bots: %v\n", err)
			return 1
		}
		if base.KnownHosts, err = trust.OpenKnownHosts(filepath.Join(dir, "known_hosts")); err != nil {
			fmt.Fprintf(stderr, "sparkhost bots: %v\n", err)
			return 1
		}
		base.OnTrustNew = func(hostport, pin string) {
			fmt.Fprintf(stdout, "trusted new server %s with pin %s (recorded in known_hosts)\n", hostport, pin)
		}
	}
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}

	// Each bot plays from the moment it is connected, while the next ones
	// connect.
	bots := make([]*netBot, o.count)
	connected := 0
	var wg sync.WaitGroup
	for i := range bots {
		b := &netBot{name: fmt.Sprintf("bot%d", i+1), seed: o.seed*uint64(maxBots) + uint64(i), catalog: catalog}
		bots[i] = b
		if ctx.Err() != nil {
			b.end = "not started: stopped while connecting"
			continue
		}
		if err := b.connect(ctx, base, o.rate); err != nil {
			b.end = "connect failed: " + err.Error()
			fmt.Fprintf(stderr, "sparkhost bots: %s: %v\n", b.name, err)
			continue
		}
		connected++
		wg.Go(func() { b.run(ctx) })
	}
	fmt.Fprintf(stdout, "%d of %d bots connected to %s\n", connected, o.count, o.server)
	wg.Wait()
	writeBotSummary(stdout, bots)
	for _, b := range bots {
		if b.end != "ok" {
			return 1
		}
	}
	return 0
}

// botMaps is the maps bots predict on: dir, else the built-in ones.
func botMaps(dir string) (*maps.Catalog, error) {
	if dir != "" {
		return maps.LoadDir(dir)
	}
	return maps.Builtin()
}

// netBot is one bot: a client, a brain and a predictor, run by one
// goroutine.
type netBot struct {
	name    string
	seed    uint64
	catalog *maps.Catalog
	c       *netstack.Client
	period  time.Duration

	brain    *bot.Brain
	pred     *predict.Predictor
	world    *movement.World
	mapName  string
	tickRate int
	seq      uint32 // last input sent
	firstSeq uint32 // the current Predictor's first input
	buf      []byte

	inputs, acks, respawns, kills, deaths uint64
	maxCorrection                         float32
	end                                   string // "ok" or why not
}

// connect dials the server and sets the bot up on its map.
func (b *netBot) connect(ctx context.Context, base netstack.ClientConfig, rate int) error {
	cfg := base
	cfg.Name = b.name
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, err := netstack.Dial(dctx, cfg)
	if err != nil {
		return err
	}
	b.c = c
	gss := c.GameState()
	b.tickRate = max(int(gss.TickRate), 1)
	if rate == 0 {
		rate = b.tickRate
	}
	b.period = time.Second / time.Duration(rate)
	if err := b.setMap(gss.Map); err != nil {
		c.Close()
		b.c = nil
		return err
	}
	return nil
}

// setMap switches the bot to the named map. A map the bot does not have
// (the server's own maps without --maps-dir) becomes an open field: the
// bot still plays, its prediction is corrected by every InputAck.
func (b *netBot) setMap(name string) error {
	m, ok := b.catalog.Get(name)
	if !ok {
		m = openField(name)
	}
	w, err := m.World(movement.Params{TickRate: b.tickRate})
	if err != nil {
		return err
	}
	if b.brain == nil {
		if b.brain, err = bot.New(bot.Config{Seed: b.seed, Map: m, TickRate: b.tickRate, AimError: 1.5}); err != nil {
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
	b.world, b.mapName = w, name
	return nil
}

func openField(name string) *maps.Map {
	return &maps.Map{
		Name:   name,
		Bounds: movement.Box{Min: wire.Vec3{X: -1000, Y: -100, Z: -1000}, Max: wire.Vec3{X: 1000, Y: 100, Z: 1000}},
		Spawns: []maps.Spawn{{}},
	}
}

// run plays until ctx ends (then leaves with ClientQuit) or the server
// drops the bot.
func (b *netBot) run(ctx context.Context) {
	ticker := time.NewTicker(b.period)
	defer ticker.Stop()
	poll, cancel := context.WithCancel(context.Background())
	cancel() // a cancelled context makes Receive return at once when nothing is queued
	for {
		select {
		case <-ctx.Done():
			b.c.Close()
			b.end = "ok"
			return
		case <-b.c.Done():
			reason, detail := b.c.CloseReason()
			b.end = fmt.Sprintf("dropped: %s (%s)", reason, detail)
			return
		case <-ticker.C:
		}
		for {
			msg, err := b.c.Receive(poll)
			if err != nil {
				break
			}
			b.handle(msg)
		}
		b.step()
	}
}

// step sends the next input. Enemies are none until the bots learn the
// other players' positions from entity replication: that is where they
// plug in.
func (b *netBot) step() {
	in, err := b.pred.Predict(b.brain.Think(b.pred.State(), nil))
	if err != nil {
		return // cannot happen: the brain's inputs are valid
	}
	b.seq = in.InputSeq
	b.buf = wire.AppendClientInput(b.buf[:0], &in)
	if b.c.Send(wire.TypeClientInput, wire.Unreliable, b.buf) == nil {
		b.inputs++
	}
}

func (b *netBot) handle(m netstack.Message) {
	p := m.Payload
	switch m.Header.Type {
	case wire.TypeInputAck:
		ack, err := wire.ParseInputAck(p)
		// An ack of an input sent before a map change reaches the new
		// Predictor, which never sent it: skip it.
		if err != nil || int32(ack.LastInputSeq-b.firstSeq) < 0 {
			return
		}
		if ok, _ := b.pred.Reconcile(ack); ok {
			b.acks++
			b.maxCorrection = max(b.maxCorrection, b.pred.LastCorrection())
		}
	case wire.TypePlayerRespawn:
		r, err := wire.ParsePlayerRespawn(p)
		if err == nil && r.Client == b.c.ID() {
			b.respawns++
			_ = b.pred.Reset(movement.State{Position: r.Position, Yaw: r.Yaw}) // finite: the parser checked
		}
	case wire.TypeMatchStart:
		if ms, err := wire.ParseMatchStart(p); err == nil && ms.Map != b.mapName {
			_ = b.setMap(ms.Map)
		}
	case wire.TypeGameStateSync:
		if g, err := wire.ParseGameStateSync(p); err == nil && g.Map != b.mapName {
			_ = b.setMap(g.Map)
		}
	case deathmatch.TypeFrag:
		f, err := deathmatch.ParseFrag(p)
		switch {
		case err != nil:
		case f.Victim == b.c.ID():
			b.deaths++
		case f.Killer == b.c.ID() && f.Flags == 0:
			b.kills++
		}
	}
}

func writeBotSummary(w io.Writer, bots []*netBot) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "bot\tid\tinputs\tacks\trespawns\tkills\tdeaths\tmax-correction\tend")
	for _, b := range bots {
		id := "-"
		if b.c != nil {
			id = fmt.Sprint(b.c.ID())
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.3f\t%s\n",
			b.name, id, b.inputs, b.acks, b.respawns, b.kills, b.deaths, b.maxCorrection, b.end)
	}
	tw.Flush()
}
