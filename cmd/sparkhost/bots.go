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

	"github.com/sparkhost/sparkhost/modules/deathmatch/maps"
	"github.com/sparkhost/sparkhost/modules/deathmatch/netbot"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/movement"
)

const botsUsage = `usage: sparkhost bots --count N --server HOST:PORT [--pin PIN] [--data-dir DIR]
                     [--duration D] [--seed S] [--rate HZ] [--maps-dir DIR]
                     [--rooms R [--mode MODE]] [--connect K] [--service D]

Runs N headless deathmatch players, named bot1 … botN, in this process, for
tests and load. Each bot is its own protocol v4 client (its own socket and
session; v3 only when the server speaks nothing newer). It keeps the
replicated entities the server sends, and every tick it takes the other
players' bodies of another team from them (their
replicated position and team), asks the bot brain (modules/deathmatch/bot)
for an input — wander the map, aim at the nearest enemy in sight, fire when
aimed — predicts it with the server's movement code (client/predict) and
sends it as ClientInput; InputAck reconciles the prediction, PlayerRespawn
restarts it at the spawn, the module's Map message (and MatchStart,
GameStateSync) say which map is played. One goroutine plays every bot of
the process: each tick it hands each bot what arrived and writes its input,
so that thousands of bots cost their own work, not a goroutine and a timer
each. docs/deathmatch.md has the rest.

flags:
  --count N         bots to run, 1..4096 (required)
  --server ADDR     the server's IPv4 address and port, e.g. 127.0.0.1:27015 (required)
  --pin PIN         accept only this server identity (ed25519:...); without it
                    known_hosts in --data-dir decides, trusting a new server on first use
  --data-dir DIR    holds known_hosts (default: the user config dir + /sparkhost)
  --duration D      stop after D, e.g. 30s (default: until interrupted)
  --seed S          seed of the bots' choices; the same seed, the same bots (default 1)
  --rate HZ         inputs per second per bot, 1..1000; 0 = the server's tick rate (default 0)
  --maps-dir DIR    the server's maps, when they are not the built-in ones
  --rooms R         on a server with a lobby (sparkhost run --rooms): spread the
                    bots over R rooms, ceil(N/R) each; the first bot of each room
                    creates and starts it (capacity ceil(N/R)), the others join
  --mode MODE       the mode of those rooms (default deathmatch)
  --connect K       bots connecting at once, 1..256 (default 16); with --rooms,
                    rooms filling at once, each room's bots one after another
  --service D       how often each bot's connection runs its timers (heartbeats,
                    retransmissions, delayed acks), 1ms..1s (default 10ms); a bot
                    sends every tick anyway, with its acks: a load of thousands
                    of bots raises it so their wake-ups do not cost a core

Bots connect K at a time (the server's Connect budget per address allows
bursts of connect_burst, then connect_refill_per_second; a v4 handshake
costs two datagrams: the hello and its echo of the cookie) and each plays
from the moment it is in; --duration counts from the start. At the
end one line per bot gives its inputs sent, InputAcks, respawns, inputs
with the fire button held, hits, kills, deaths and largest prediction
correction while alive. The exit code is 0 when every bot connected and stayed
connected until the end, 1 otherwise, 2 for bad flags.
`

const maxBots = 4096

// defaultConnect and maxConnect bound --connect.
const defaultConnect, maxConnect = 16, 256

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
	rooms    int
	mode     string
	connect  int
	service  time.Duration
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
	fs.IntVar(&o.rooms, "rooms", 0, "")
	fs.StringVar(&o.mode, "mode", "deathmatch", "")
	fs.IntVar(&o.connect, "connect", defaultConnect, "")
	fs.DurationVar(&o.service, "service", netstack.DefaultServiceInterval, "")
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
	case o.rooms < 0 || o.rooms > o.count:
		return fail("--rooms %d: want 0..--count (%d)", o.rooms, o.count)
	case o.connect < 1 || o.connect > maxConnect:
		return fail("--connect %d: want 1..%d", o.connect, maxConnect)
	case o.service < time.Millisecond || o.service > time.Second:
		return fail("--service %v: want 1ms..1s", o.service)
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
	// Bots come back to their seats after an outage (docs/protocol.md §3.15),
	// as the console does: a rig scenario with bots sees resumptions.
	// A bot writes its input (and the acks it owes) on the group's
	// goroutine as it sends it: no writer to wake, no flush timer to arm.
	base := netstack.ClientConfig{Server: o.server, Pin: o.pin, Resumable: true, ServiceInterval: o.service, FlushInterval: -1}
	if base.Registry, err = netbot.Registry(); err != nil {
		fmt.Fprintf(stderr, "sparkhost bots: %v\n", err)
		return 1
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
	// connect; one goroutine plays them all (netbot.Group).
	fmt.Fprintf(stdout, "connecting %d bots to %s\n", o.count, o.server)
	group := netbot.NewGroup(ctx)
	bots, connected := o.connectAll(ctx, stdout, func(ctx context.Context, i int, room *uint32) (*netbot.Bot, error) {
		b, err := netbot.Dial(ctx, netbot.Config{Name: fmt.Sprintf("bot%d", i+1), Client: base, Maps: catalog, Rate: o.rate,
			Seed: o.seed*uint64(maxBots) + uint64(i)})
		if err != nil {
			return nil, err
		}
		if err := o.enterRoom(ctx, b, i, room); err != nil {
			b.Close()
			return nil, fmt.Errorf("room: %w", err)
		}
		return b, nil
	}, func(r *botRun) {
		group.Add(r.bot, func(err error) {
			if err != nil {
				r.end = err.Error()
			} else {
				r.end = "ok" // read after group.Wait
			}
		})
	}, stderr)
	fmt.Fprintf(stdout, "%d of %d bots connected to %s\n", connected, o.count, o.server)
	stopProfile := startBotsProfile(stderr)
	group.Wait()
	stopProfile()
	writeBotSummary(stdout, bots)
	for _, r := range bots {
		if r.end != "ok" {
			return 1
		}
	}
	return 0
}

// dialFunc connects bot i and puts it in its room (*room: the id of the
// room its group plays in, set by the group's first bot).
type dialFunc func(ctx context.Context, i int, room *uint32) (*netbot.Bot, error)

// connectAll connects the bots, --connect of them at once: a connection
// waits for the server's answers (the handshake's round trips, a tick for
// admission, another for a room request), and one after another those
// waits add up to minutes for thousands of bots, more as the bots already
// playing load the machine. With --rooms a room's bots are connected in
// turn by one worker (its first creates the room the others join), rooms
// side by side. play starts a connected bot. It returns every bot's run
// and how many connected.
func (o *botsOptions) connectAll(ctx context.Context, stdout io.Writer, dial dialFunc, play func(*botRun), stderr io.Writer) ([]*botRun, int) {
	bots := make([]*botRun, o.count)
	for i := range bots {
		bots[i] = &botRun{name: fmt.Sprintf("bot%d", i+1)}
	}
	groups := make(chan []int)
	go func() {
		defer close(groups)
		for _, g := range o.groups() {
			select {
			case groups <- g:
			case <-ctx.Done():
				return
			}
		}
	}()
	var mu sync.Mutex // the counts and the progress line
	connected, failed := 0, 0
	prog := newProgress(stdout)
	var workers sync.WaitGroup
	for range min(o.connect, o.count) {
		workers.Go(func() {
			for g := range groups {
				var room uint32
				for _, i := range g {
					r := bots[i]
					if ctx.Err() != nil {
						r.end = "not started: stopped while connecting"
						continue
					}
					b, err := dial(ctx, i, &room)
					mu.Lock()
					if err != nil {
						r.end = "connect failed: " + err.Error()
						failed++
						fmt.Fprintf(stderr, "sparkhost bots: %s: %v\n", r.name, err)
					} else {
						r.bot = b
						connected++
						play(r)
					}
					prog.botsIn(connected, failed, o.count)
					mu.Unlock()
				}
			}
		})
	}
	workers.Wait()
	for _, r := range bots {
		if r.bot == nil && r.end == "" { // its group was never taken
			r.end = "not started: stopped while connecting"
		}
	}
	return bots, connected
}

// groups are the bots connected in turn: a room's (ceil(count/rooms)
// each) with --rooms, else each bot alone.
func (o *botsOptions) groups() [][]int {
	per := 1
	if o.rooms > 0 {
		per = (o.count + o.rooms - 1) / o.rooms
	}
	var out [][]int
	for first := 0; first < o.count; first += per {
		g := make([]int, 0, per)
		for i := first; i < min(first+per, o.count); i++ {
			g = append(g, i)
		}
		out = append(out, g)
	}
	return out
}

// roomAnswerWait bounds the wait for the answer to one room request: a
// request left unanswered fails the bot, named, instead of holding its
// room's other bots back for the rest of the run.
var roomAnswerWait = 30 * time.Second // a variable for the tests

// enterRoom puts bot i in its room with --rooms: the first of each room
// creates and starts it, the others join *room (0: the first failed).
func (o *botsOptions) enterRoom(ctx context.Context, b *netbot.Bot, i int, room *uint32) error {
	if o.rooms == 0 {
		return nil
	}
	per := (o.count + o.rooms - 1) / o.rooms
	if i%per != 0 {
		if *room == 0 {
			return errors.New("the room's first bot did not open it")
		}
		_, err := roomRequest(ctx, b, gamemsg.TypeRoomJoin, gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: *room}))
		return err
	}
	id, err := roomRequest(ctx, b, gamemsg.TypeRoomCreate, gamemsg.AppendRoomCreate(nil, &gamemsg.RoomCreate{
		Name: fmt.Sprintf("bots %d", i/per+1), Mode: o.mode, Capacity: uint16(per)}))
	if err != nil {
		return err
	}
	if _, err = roomRequest(ctx, b, gamemsg.TypeRoomStart, nil); err != nil {
		return err
	}
	*room = id // the others join a room that plays
	return nil
}

// roomRequest is b.EnterRoom bounded by roomAnswerWait.
func roomRequest(ctx context.Context, b *netbot.Bot, t wire.MessageType, payload []byte) (uint32, error) {
	rctx, cancel := context.WithTimeout(ctx, roomAnswerWait)
	defer cancel()
	id, err := b.EnterRoom(rctx, t, payload)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		st := b.NetStats()
		return 0, fmt.Errorf("no answer to %s within %v (the connection: %d messages received, %d dropped from a full inbox, %d retransmissions)",
			t, roomAnswerWait, st.MessagesReceived, st.InboxDrops, st.Retransmissions)
	}
	return id, err
}

// botMaps is the maps bots predict on: dir, else the built-in ones.
func botMaps(dir string) (*maps.Catalog, error) {
	if dir != "" {
		return maps.LoadDir(dir)
	}
	return maps.Builtin()
}

// botRun is one bot of the run and how it ended.
type botRun struct {
	name string
	bot  *netbot.Bot // nil: it never connected
	end  string      // "ok" or why not
}

func writeBotSummary(w io.Writer, bots []*botRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "bot\tid\tinputs\tacks\trespawns\tfiring\thits\tkills\tdeaths\tmax-correction\tend")
	for _, r := range bots {
		id, st := "-", netbot.Stats{}
		if r.bot != nil {
			id, st = fmt.Sprint(r.bot.ID()), r.bot.Stats()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%s\n",
			r.name, id, st.Inputs, st.Acks, st.Respawns, st.Firing, st.Hits, st.Kills, st.Deaths, st.MaxCorrection, r.end)
	}
	tw.Flush()
}
