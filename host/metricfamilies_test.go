package host_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/handshake"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
	"github.com/sparkhost/sparkhost/sim/roomauth"
)

// Every metric family /metrics exports (ops/metrics.go, netstack/metrics.go)
// is asserted here against traffic the test drives — real UDP clients, and
// crafted datagrams for what an honest client never sends — on a real
// server whose ops listener is on a loopback port. A family is "checked"
// once a test compared its scraped value with what the traffic must have
// made it; TestMetricFamilies ends by listing the families /metrics
// exports that nothing checked (a new family needs a test here).

// scraped is one scrape with the record of what was checked in it.
type scraped struct {
	t    *testing.T
	fams map[string]*dto.MetricFamily
}

var (
	checkedMu sync.Mutex
	checked   = map[string]bool{}
)

// want asserts the family's series with labels equals v, and records the
// family as checked.
func (s scraped) want(name string, v float64, labels ...string) {
	s.t.Helper()
	s.check(name, func(got float64) bool { return got == v }, "== "+ftoa(v), labels...)
}

// atLeast asserts the series is at least v.
func (s scraped) atLeast(name string, v float64, labels ...string) {
	s.t.Helper()
	s.check(name, func(got float64) bool { return got >= v }, ">= "+ftoa(v), labels...)
}

func (s scraped) check(name string, ok func(float64) bool, what string, labels ...string) {
	s.t.Helper()
	if got := value(s.t, s.fams, name, labels...); !ok(got) {
		s.t.Errorf("%s%v = %v, want %s", name, labels, got, what)
	}
	checkedMu.Lock()
	checked[name] = true
	checkedMu.Unlock()
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// scrapeNow scrapes the server.
func scrapeNow(t *testing.T, srv *host.Server) scraped {
	t.Helper()
	return scraped{t: t, fams: scrape(t, srv)}
}

// await scrapes until cond holds for the scrape (the game thread publishes
// its figures a few times a second), failing after 10 s.
func await(t *testing.T, srv *host.Server, what string, cond func(scraped) bool) scraped {
	t.Helper()
	var s scraped
	eventually(t, what, func() bool {
		s = scrapeNow(t, srv)
		return cond(s)
	})
	return s
}

// v reads a series without checking it.
func (s scraped) v(name string, labels ...string) float64 { return value(s.t, s.fams, name, labels...) }

// TestMetricFamilies drives and checks every family, then lists any that
// /metrics exports and no subtest checked.
func TestMetricFamilies(t *testing.T) {
	groups := []struct {
		name string
		run  func(t *testing.T) *host.Server
	}{
		{"server_chat_tick_modules", metricsOfServerAndModules},
		{"rooms", metricsOfRooms},
		{"transport", metricsOfTheTransport},
		{"handshakes", metricsOfHandshakes},
		{"web", metricsOfWeb},
	}
	all := true
	for _, g := range groups {
		ran := false
		t.Run(g.name, func(t *testing.T) { ran = true; g.run(t) })
		all = all && ran
	}
	if !all {
		return // filtered: the list below needs every group
	}
	srv, _ := startHost(t, func(c *config.Config) { withOps(c); withWeb(c) }, supervisor.Spec{Source: "probe", Kind: "go", New: func() (module.Module, error) {
		return &probeModule{stall: new(atomic.Pointer[chan struct{}]), hold: new(atomic.Bool)}, nil
	}})
	eventually(t, "the modules published", func() bool { return len(srv.Snapshot().Modules) == 1 })
	var missing []string
	for name := range scrape(t, srv) {
		if strings.HasPrefix(name, "sparkhost_") && !checked[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("families exported but never checked against driven traffic: %v", missing)
	}
}

// The module of the server group: it echoes a message, faults on "f",
// crashes its process on "c" (a module.ErrCrashed, as a plugin whose
// process died), stalls the game thread while told to, and holds its
// inbox (module.Backlogger) while told to.
var metricsSchema = wire.Schema{ID: 1600, Name: "Probe", Direction: wire.BothDirections, Channel: wire.Reliable,
	MinLen: 1, MaxLen: 64, StringFieldOffset: wire.NoStringFields}

type probeModule struct {
	h       module.Host
	stall   *atomic.Pointer[chan struct{}]
	hold    *atomic.Bool
	crashed bool
}

func (p *probeModule) Load(h module.Host) (module.Manifest, error) {
	p.h = h
	return module.Manifest{Name: "probe", Version: "1", Messages: []wire.Schema{metricsSchema}}, nil
}

func (p *probeModule) Step(_ module.Tick, events []module.Event) error {
	for _, ev := range events {
		if ev.Kind != module.EventMessage {
			continue
		}
		switch string(ev.Payload) {
		case "f":
			p.h.Fault(errors.New("asked to fault"))
		case "c":
			return errors.New("process exited: " + module.ErrCrashed.Error() + " (asked to)")
		case "b": // to everyone
			p.h.Broadcast(ev.Type, ev.Payload)
		case "v": // a v4-only type (MessageRefused, a transport notice) to the sender
			p.h.Send(ev.Client, wire.TypeMessageRefused, wire.AppendMessageRefused(nil, &wire.MessageRefused{Type: 1600, Reason: wire.RefusedMalformed}))
		default:
			p.h.Send(ev.Client, ev.Type, ev.Payload)
		}
	}
	if ch := p.stall.Load(); ch != nil {
		<-*ch
	}
	return nil
}

func (p *probeModule) Backlog() int {
	if p.hold.Load() {
		return 1 << 20 // holds everything: the inbox fills
	}
	return 0
}
func (p *probeModule) Command(string, []string) (string, error) { return "", nil }
func (p *probeModule) Unload() error                            { return nil }

func probeRegistry() *wire.Registry {
	reg := gamemsg.NewRegistry()
	reg.Register("probe", metricsSchema)
	return reg
}

// metricsOfServerAndModules: players, admissions, chat, the match, the
// tick loop and a module's families.
func metricsOfServerAndModules(t *testing.T) *host.Server {
	var stall atomic.Pointer[chan struct{}]
	var hold atomic.Bool
	crashes := 0
	spec := supervisor.Spec{Source: "probe", Kind: "go", New: func() (module.Module, error) {
		return &probeModule{stall: &stall, hold: &hold}, nil
	}}
	wrapCrash := supervisor.Spec{Source: spec.Source, Kind: spec.Kind, New: func() (module.Module, error) {
		m, _ := spec.New()
		return &crashOnce{probeModule: m.(*probeModule), crashes: &crashes}, nil
	}}
	began := time.Now()
	srv, _ := startHostWith(t, host.Options{Version: "9.9.9-metrics"}, func(c *config.Config) {
		withOps(c)
		c.Server.MaxClients = 3
		c.Limits.ChatPerSecond, c.Limits.ChatBurst, c.Limits.ChatKickAfter = 0.01, 2, 3
		c.Modules.InboxCapacity = 16 // the least
		c.Modules.RestartBackoff, c.Modules.RestartBackoffMax = 0.2, 0.2
	}, wrapCrash)
	ready := time.Now()
	alice := dialAs(t, srv, "alice", probeRegistry())
	bob := dialAs(t, srv, "bob", probeRegistry())
	carol := dialAs(t, srv, "carol", probeRegistry())
	eventually(t, "three players", func() bool { return srv.Stats().Players == 3 })
	carol.Close()
	eventually(t, "two players", func() bool { return srv.Stats().Players == 2 })

	// Chat: two lines relayed (the burst), the third dropped, and a
	// flooder disconnected after three over its budget.
	for _, line := range []string{"one", "two", "three"} {
		if err := alice.Send(gamemsg.TypeChatMessage, wire.Reliable, chatLine(line)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		waitFor(t, bob, gamemsg.TypeChatMessage)
	}
	flood := dialAs(t, srv, "flood", nil)
	eventually(t, "the flooder admitted", func() bool { return srv.Stats().ConnectionsServed == 4 })
	for range 2 { // its burst: relayed
		flood.Send(gamemsg.TypeChatMessage, wire.Reliable, chatLine("spam"))
	}
	for range 2 {
		waitFor(t, bob, gamemsg.TypeChatMessage)
	}
	for range 3 { // over its budget: dropped, and the third disconnects it
		flood.Send(gamemsg.TypeChatMessage, wire.Reliable, chatLine("spam"))
	}
	<-flood.Done()

	s := await(t, srv, "chat counted", func(s scraped) bool {
		return s.v("sparkhost_chat_rate_limited_total") == 1 && s.v("sparkhost_chat_messages_dropped_total") == 1+3 && s.v("sparkhost_players") == 2
	})
	s.want("sparkhost_players", 2)
	s.want("sparkhost_players_peak", 3)
	s.want("sparkhost_player_slots", 3)
	s.want("sparkhost_connections_admitted_total", 4)
	s.want("sparkhost_chat_messages_relayed_total", 2+2) // alice's two, the flooder's burst
	s.want("sparkhost_chat_messages_dropped_total", 1+3)
	s.want("sparkhost_chat_rate_limited_total", 1)
	s.want("sparkhost_serving", 1)
	s.check("sparkhost_start_time_seconds", func(v float64) bool {
		return v >= float64(began.Add(-time.Second).Unix()) && v <= float64(ready.Unix()+1)
	}, "the start time")
	s.want("sparkhost_build_info", 1, "version=9.9.9-metrics")
	st := srv.Stats()
	s.want("sparkhost_match_info", 1, "map="+st.Map, "mode=deathmatch", "state="+st.MatchState.String())

	// The tick loop: a stall of 300 ms or more (18 periods at 60 Hz) overruns one
	// tick, makes the next late and skips slots.
	release := make(chan struct{})
	stall.Store(&release)
	alice.Send(metricsSchema.ID, wire.Reliable, []byte("x")) // wakes the module's Step
	time.Sleep(400 * time.Millisecond)
	stall.Store(nil)
	close(release)
	s = await(t, srv, "the stall counted", func(s scraped) bool { return s.v("sparkhost_tick_skipped_total") >= 1 })
	s.atLeast("sparkhost_tick_overruns_total", 1)
	s.atLeast("sparkhost_tick_late_total", 1)
	s.atLeast("sparkhost_tick_skipped_total", 1)
	s.want("sparkhost_tick_rate_hertz", 60)
	ticks := s.v("sparkhost_ticks_total")
	s.check("sparkhost_ticks_total", func(v float64) bool {
		return v >= 60*time.Since(ready).Seconds()/4 // a quarter of the slots, even on a busy machine
	}, "ticks at 60 Hz")
	h := s.fams["sparkhost_tick_duration_seconds"].GetMetric()[0].GetHistogram()
	if c := float64(h.GetSampleCount()); c < ticks-5 || c > ticks+5 || h.GetSampleSum() < 0.3 {
		t.Errorf("tick_duration_seconds: %v ticks observed, sum %vs; ticks_total %v, and one tick took 0.3 s", c, h.GetSampleSum(), ticks)
	}
	checked["sparkhost_tick_duration_seconds"] = true
	s.check("sparkhost_tick_last_timestamp_seconds", func(v float64) bool {
		return v >= float64(time.Now().Add(-5*time.Second).Unix()) && v <= float64(time.Now().Unix()+1)
	}, "within the last seconds")

	// The module: a fault, an inbox that fills (16) and drops (2), then a
	// crash and its restart.
	alice.Send(metricsSchema.ID, wire.Reliable, []byte("f"))
	s = await(t, srv, "the fault", func(s scraped) bool { return s.v("sparkhost_module_faults_total", "module=probe") == 1 })
	s.want("sparkhost_module_faults_total", 1, "module=probe")
	s.want("sparkhost_module_state", 1, "module=probe", "state=running")
	s.want("sparkhost_module_inbox_capacity", 16, "module=probe")
	s.check("sparkhost_module_tick_seconds_total", func(v float64) bool { return v >= 0.3 }, ">= the 0.3 s stall", "module=probe")
	hold.Store(true)
	for i := range 18 {
		alice.Send(metricsSchema.ID, wire.Reliable, []byte{'a' + byte(i)})
	}
	s = await(t, srv, "the inbox full", func(s scraped) bool { return s.v("sparkhost_module_inbox_drops_total", "module=probe") == 2 })
	s.want("sparkhost_module_inbox_depth", 16, "module=probe")
	s.want("sparkhost_module_inbox_drops_total", 2, "module=probe")
	s.want("sparkhost_net_inbox_drops_total", 2)
	hold.Store(false)
	await(t, srv, "the inbox drained", func(s scraped) bool { return s.v("sparkhost_module_inbox_depth", "module=probe") == 0 })
	alice.Send(metricsSchema.ID, wire.Reliable, []byte("c"))
	s = await(t, srv, "the restart", func(s scraped) bool { return s.v("sparkhost_module_restarts_total", "module=probe") == 1 })
	s.want("sparkhost_module_restarts_total", 1, "module=probe")
	s.want("sparkhost_module_state", 0, "module=probe", "state=restarting")
	return srv
}

// crashOnce crashes at its first "c", and never again after its restart.
type crashOnce struct {
	*probeModule
	crashes *int
}

func (c *crashOnce) Step(t module.Tick, events []module.Event) error {
	err := c.probeModule.Step(t, events)
	if err != nil && *c.crashes == 0 {
		*c.crashes++
		return errWrap{err}
	}
	return nil
}

// errWrap makes a crash error match module.ErrCrashed.
type errWrap struct{ error }

func (e errWrap) Unwrap() error { return module.ErrCrashed }

// startHostWith is startHost with Options fields (Version) set.
func startHostWith(t *testing.T, opts host.Options, mod func(*config.Config), extra ...supervisor.Spec) (*host.Server, string) {
	t.Helper()
	cfg := config.Default()
	port, dataDir := 0, shortDataDir(t)
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir}, func(string) string { return "" })
	cfg.Match.WarmupSeconds, cfg.Match.IntermissionSeconds = 0, 0
	if mod != nil {
		mod(&cfg)
	}
	opts.Config, opts.Logger, opts.Modules = cfg, testLogger(), extra
	srv, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv, dataDir
}

// chatLine is a client's ChatMessage payload.
func chatLine(text string) []byte {
	return gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: text})
}

// connectDatagram is a plain Connect datagram around hello (§2, §3).
func connectDatagram(hello []byte) []byte {
	return wire.AppendPacket([]byte{0x01}, &wire.Header{Type: wire.TypeConnect}, hello)
}

// firstHello is a v4 first hello (no cookie), its bytes changed by edit.
func firstHello(t *testing.T, edit func(b []byte)) []byte {
	t.Helper()
	hs, err := handshake.NewClientHandshake4(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := hs.Hello4(nil)
	if edit != nil {
		edit(b)
	}
	return b
}

// metricsOfRooms: a lobby, rooms opened and closed, their players, and
// room passwords wrong, refused in a back-off and their guesser kicked.
func metricsOfRooms(t *testing.T) *host.Server {
	srv := startLobby(t, []string{"entities"}, nil, func(c *config.Config) {
		withOps(c)
		c.Rooms.Max, c.Rooms.EmptyGraceSeconds = 5, 0
		c.Rooms.PasswordFreeFailures, c.Rooms.PasswordBackoffSeconds, c.Rooms.PasswordBackoffMaxSeconds = 1, 60, 60
		c.Rooms.PasswordKickAfter = 3
	})
	alice, bob, carol := newRoomClient(t, srv, "alice"), newRoomClient(t, srv, "bob"), newRoomClient(t, srv, "carol")
	v, err := roomauth.NewVerifier("sesame", roomauth.MinIterations, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	room := alice.ok(gamemsg.TypeRoomCreate, gamemsg.AppendRoomCreate(nil, &gamemsg.RoomCreate{Name: "secret", Mode: "entities",
		Password: true, Salt: v.Salt, Iterations: v.Iterations, StoredKey: v.StoredKey}))
	carol.ok(gamemsg.TypeRoomCreate, create("brief", "entities", 4))
	carol.ok(gamemsg.TypeRoomLeave, nil) // empty: it closes (empty_grace_seconds 0)
	wrong, _ := roomauth.Proof("open", v.Salt, v.Iterations, room, bob.c.ChannelBinding())
	guess := gamemsg.AppendRoomJoin(nil, &gamemsg.RoomJoin{Room: room, Proof: wrong[:]})
	bob.refused(gamemsg.TypeRoomJoin, guess, gamemsg.RoomWrongPassword) // free
	bob.refused(gamemsg.TypeRoomJoin, guess, gamemsg.RoomWrongPassword) // checked: the back-off starts
	bob.send(gamemsg.TypeRoomJoin, guess)                               // refused unchecked, and the third: kicked
	<-bob.c.Done()

	s := await(t, srv, "the rooms counted", func(s scraped) bool {
		return s.v("sparkhost_rooms_closed_total") == 1 && s.v("sparkhost_room_password_kicks_total") == 1 &&
			s.v("sparkhost_lobby_players") == 1
	})
	s.want("sparkhost_rooms", 1, "mode=entities", "state=waiting")
	s.want("sparkhost_rooms", 0, "mode=entities", "state=playing")
	s.want("sparkhost_room_players", 1, "mode=entities")
	s.want("sparkhost_lobby_players", 1) // carol; bob was disconnected
	s.want("sparkhost_rooms_max", 5)
	s.want("sparkhost_rooms_opened_total", 2)
	s.want("sparkhost_rooms_closed_total", 1)
	s.want("sparkhost_room_password_failures_total", 2)
	s.want("sparkhost_room_password_refused_total", 1)
	s.want("sparkhost_room_password_kicks_total", 1)
	return srv
}

// deafConn drops what arrives while deaf is set: a client that stops
// hearing the server, so that the server must send again.
type deafConn struct {
	net.PacketConn
	deaf atomic.Bool
}

func (d *deafConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, a, err := d.PacketConn.ReadFrom(p)
		if err != nil || !d.deaf.Load() {
			return n, a, err
		}
	}
}

// metricsOfTheTransport: bytes, datagrams and messages both ways (exact,
// from the clients' own counts), retransmissions to a client that stopped
// hearing, refusals of every kind a client can cause, held messages of a
// module that restarts, a v4-only send refused for a v3 client, and the
// drops of datagrams that are not a session's.
func metricsOfTheTransport(t *testing.T) *host.Server {
	var hold atomic.Bool
	var stall atomic.Pointer[chan struct{}]
	crashes := 0
	srv, _ := startHostWith(t, host.Options{}, func(c *config.Config) {
		withOps(c)
		c.Modules.RestartBackoff, c.Modules.RestartBackoffMax = 1, 1
	}, supervisor.Spec{Source: "probe", Kind: "go", New: func() (module.Module, error) {
		return &crashOnce{probeModule: &probeModule{stall: &stall, hold: &hold}, crashes: &crashes}, nil
	}})
	// A client whose registry lies about the module's type: it sends it on
	// the wrong channel, too long, and a type nobody registered.
	liar := gamemsg.NewRegistry()
	for _, s := range []wire.Schema{
		{ID: 1600, Name: "Probe", Direction: wire.BothDirections, Channel: wire.Unreliable, MinLen: 1, MaxLen: 200, StringFieldOffset: wire.NoStringFields},
		{ID: 1999, Name: "Nobody", Direction: wire.BothDirections, Channel: wire.Reliable, MinLen: 1, MaxLen: 8, StringFieldOffset: wire.NoStringFields},
		// The server's answers to it are 1..64 bytes: this client refuses
		// any over 1 (BadSize) and tells the server (MessageRefused).
		{ID: 1601, Name: "Tiny", Direction: wire.BothDirections, Channel: wire.Reliable, MinLen: 1, MaxLen: 1, StringFieldOffset: wire.NoStringFields},
	} {
		if err := liar.Register("liar", s); err != nil {
			t.Fatal(err)
		}
	}
	a := dialAs(t, srv, "alice", probeRegistry())
	uc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	deaf := &deafConn{PacketConn: uc}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: "bob", Pin: srv.Pin(), Registry: liar, Conn: deaf})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	eventually(t, "two players", func() bool { return srv.Stats().Players == 2 })
	before := scrapeNow(t, srv)

	// Refused: the wrong channel, and a type nobody registered.
	b.Send(1600, wire.Unreliable, []byte("x"))
	b.Send(1999, wire.Reliable, []byte("x"))
	// Refused by bob, who says 1600 is Unreliable, when the server
	// broadcasts it Reliable: bob tells the server.
	a.Send(metricsSchema.ID, wire.Reliable, []byte("b"))
	waitFor(t, a, metricsSchema.ID)
	// A v3 client asks the probe for a v4-only type: refused before the
	// transport (a module never sends the transport's own types), so the
	// count of sends the transport refused for the protocol stays 0.
	old := dialAsV3(t, srv, "carol")
	old.Send(metricsSchema.ID, wire.Reliable, []byte("v"))
	// Bob stops hearing: what the server sends him is sent again.
	deaf.deaf.Store(true)
	a.Send(gamemsg.TypeChatMessage, wire.Reliable, chatLine("are you there?"))
	time.Sleep(time.Second)
	deaf.deaf.Store(false)

	// Held: the probe crashes and restarts after 1 s; alice's message of
	// its type meanwhile is held and delivered once it is back.
	a.Send(metricsSchema.ID, wire.Reliable, []byte("c"))
	eventually(t, "the probe restarting", func() bool {
		m := srv.Snapshot().Modules
		return len(m) == 1 && m[0].State == "restarting"
	})
	a.Send(metricsSchema.ID, wire.Reliable, []byte("held"))
	waitFor(t, a, metricsSchema.ID)

	s := await(t, srv, "the refusals", func(s scraped) bool {
		return s.v("sparkhost_net_messages_held_delivered_total") == 1 && s.v("sparkhost_net_refusals_reported_by_clients_total") == 1 &&
			s.v("sparkhost_net_retransmissions_total") > before.v("sparkhost_net_retransmissions_total") &&
			s.v("sparkhost_net_messages_not_in_protocol_total") == 0
	})
	s.want("sparkhost_net_messages_refused_total", 1, "reason=wrong_channel")
	s.want("sparkhost_net_messages_refused_total", 1, "reason=unknown_type")
	s.want("sparkhost_net_messages_held_total", 1)
	s.want("sparkhost_net_messages_held_delivered_total", 1)
	s.atLeast("sparkhost_net_retransmissions_total", before.v("sparkhost_net_retransmissions_total")+1)
	s.want("sparkhost_net_messages_not_in_protocol_total", 0)
	s.want("sparkhost_net_refusals_reported_by_clients_total", 1)

	// Totals, exact once the clients are gone: what the server received is
	// what they sent (loopback loses nothing); it sent at least what they
	// received (bob did not hear some, on purpose).
	clients := []*netstack.Client{a, b, old}
	for _, c := range clients {
		c.Close()
	}
	var sent, recv netstack.Stats
	for _, c := range clients {
		st := c.Stats()
		sent.BytesSent += st.BytesSent
		sent.PacketsSent += st.PacketsSent
		sent.MessagesSent += st.MessagesSent
		recv.BytesReceived += st.BytesReceived
		recv.PacketsReceived += st.PacketsReceived
		recv.MessagesReceived += st.MessagesReceived
	}
	// The handshakes are not the clients' sessions' datagrams: the two v4
	// clients sent two 1,200-byte Connects each (the hello, then with the
	// cookie), the v3 client one of 79 bytes (plain frame byte, 23-byte
	// header, 55-byte hello).
	const handshakeDatagrams, handshakeBytes = 2*2 + 1, 2*2*1200 + 79
	s = await(t, srv, "every datagram counted", func(s scraped) bool {
		return s.v("sparkhost_net_datagrams_received_total") == float64(sent.PacketsSent+handshakeDatagrams)
	})
	s.want("sparkhost_net_datagrams_received_total", float64(sent.PacketsSent+handshakeDatagrams))
	s.want("sparkhost_net_plain_bytes_received_total", handshakeBytes)
	s.want("sparkhost_net_bytes_received_total", float64(sent.BytesSent+handshakeBytes))
	// Messages of admitted clients: not the ClientFinished (one each),
	// nor the copies of a Disconnect that come after the session closed
	// (after_close, a message each).
	late := s.v("sparkhost_net_datagrams_dropped_total", "reason=after_close")
	s.want("sparkhost_net_messages_received_total", float64(sent.MessagesSent)-3-late)
	s.atLeast("sparkhost_net_plain_bytes_sent_total", 2*63) // a CookieReply to each v4 client
	s.atLeast("sparkhost_net_datagrams_sent_total", float64(recv.PacketsReceived))
	s.atLeast("sparkhost_net_bytes_sent_total", float64(recv.BytesReceived))
	s.atLeast("sparkhost_net_messages_sent_total", float64(recv.MessagesReceived))
	s.want("sparkhost_net_handshakes_total", 3)
	s.atLeast("sparkhost_net_datagrams_dropped_total", 2, "reason=after_close") // two per clean quit
	return srv
}

// dialAsV3 connects a protocol v3 client.
func dialAsV3(t *testing.T, srv *host.Server, name string) *netstack.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin(), Registry: probeRegistry(), Protocol: 3})
	if err != nil {
		t.Fatalf("dial %s (v3): %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// metricsOfHandshakes: crafted Connects for every refusal reason a
// hello can cause, a full server and a banned address, cookies sent,
// verified and failed, and half-open handshakes (validated, never
// finished) in a table of one, the second evicting the first.
func metricsOfHandshakes(t *testing.T) *host.Server {
	srv, _ := startHostWith(t, host.Options{}, func(c *config.Config) {
		withOps(c)
		c.Server.MaxClients = 1
	})
	first := dialAs(t, srv, "first", nil)
	defer first.Close()
	if _, err := dialFrom(context.Background(), srv, netip.MustParseAddr("127.0.0.2"), "second"); err == nil {
		t.Fatal("a second client joined a server of one slot")
	}
	if _, err := srv.Exec("ban 127.0.0.3"); err != nil {
		t.Fatal(err)
	}
	if _, err := dialFrom(context.Background(), srv, netip.MustParseAddr("127.0.0.3"), "banned"); err == nil {
		t.Fatal("a banned address joined")
	}
	version := func(v uint16) func([]byte) { return func(b []byte) { b[4], b[5] = byte(v), byte(v>>8) } }
	for i, hello := range [][]byte{
		make([]byte, handshake.ClientHello4Size),          // no SPNH magic: protocol_missing
		firstHello(t, version(2)),                         // protocol_too_old
		firstHello(t, version(9)),                         // protocol_too_new
		firstHello(t, func(b []byte) { b[6] = 7 }),        // unsupported_suite
		firstHello(t, func(b []byte) { b[len(b)-1] = 1 }), // padding not zero: malformed_handshake
	} {
		raw := rawSocket(t, netip.AddrFrom4([4]byte{127, 0, 1, byte(i + 1)}))
		raw.send(t, srv, connectDatagram(hello))
	}
	s := await(t, srv, "the refusals counted", func(s scraped) bool {
		return s.v("sparkhost_net_handshake_refusals_total", "reason=malformed_handshake") == 1
	})
	for _, reason := range []string{"protocol_missing", "protocol_too_old", "protocol_too_new", "unsupported_suite",
		"malformed_handshake", "server_full", "banned"} {
		s.want("sparkhost_net_handshake_refusals_total", 1, "reason="+reason)
	}

	// Another server, whose half-open table holds one: two handshakes
	// validated and answered, never finished; the newer evicts the older.
	// The second sends a forged cookie first.
	ho, _ := startHostWith(t, host.Options{}, func(c *config.Config) {
		withOps(c)
		c.Network.HalfOpenMax, c.Network.HalfOpenTimeout = 1, 60
	})
	halfOpen(t, ho, rawSocket(t, netip.MustParseAddr("127.0.2.1")), nil)
	halfOpen(t, ho, rawSocket(t, netip.MustParseAddr("127.0.2.2")), []byte("not a cookie of this server"))
	s = await(t, ho, "the half-open handshakes counted", func(s scraped) bool {
		return s.v("sparkhost_net_half_open_evicted_total") == 1
	})
	s.want("sparkhost_net_half_open", 1)
	s.want("sparkhost_net_half_open_evicted_total", 1)
	s.want("sparkhost_net_handshakes_total", 2)
	s.want("sparkhost_net_cookies_total", 1, "result=failed")
	s.want("sparkhost_net_cookies_total", 2, "result=verified")
	s.want("sparkhost_net_cookies_total", 3, "result=sent")

	// A third, with the admission caps on for its private bind: one client
	// per address, one per /24. A second from 127.0.3.1 is refused by the
	// address cap, one from 127.0.3.2 by the prefix cap.
	capped, _ := startHostWith(t, host.Options{}, func(c *config.Config) {
		withOps(c)
		c.Network.AdmittedCapsPrivate = true
		c.Network.AdmittedPerAddress, c.Network.AdmittedPerPrefix = 1, 1
	})
	one, err := dialFrom(context.Background(), capped, netip.MustParseAddr("127.0.3.1"), "one")
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	for _, from := range []string{"127.0.3.1", "127.0.3.2"} {
		if _, err := dialFrom(context.Background(), capped, netip.MustParseAddr(from), "more"); err == nil {
			t.Fatalf("a second client from %s passed the caps", from)
		}
	}
	s = await(t, capped, "the cap refusals counted", func(s scraped) bool {
		return s.v("sparkhost_net_admission_cap_refusals_total", "cap=prefix") >= 1
	})
	s.want("sparkhost_net_admission_cap_refusals_total", 1, "cap=address")
	s.want("sparkhost_net_admission_cap_refusals_total", 1, "cap=prefix")
	s.want("sparkhost_net_handshake_refusals_total", 2, "reason=address_limit")
	return srv
}

// rawUDP is a socket bound to a loopback address, for crafted datagrams.
type rawUDP struct{ *net.UDPConn }

func rawSocket(t *testing.T, from netip.Addr) rawUDP {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(from, 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return rawUDP{c}
}

func (r rawUDP) send(t *testing.T, srv *host.Server, d []byte) {
	t.Helper()
	if _, err := r.WriteToUDPAddrPort(d, srv.Addr()); err != nil {
		t.Fatal(err)
	}
}

// answer reads the server's next datagram to r: its header and payload.
func (r rawUDP) answer(t *testing.T) (wire.Header, []byte) {
	t.Helper()
	buf := make([]byte, 2048)
	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _, err := r.ReadFromUDPAddrPort(buf)
	if err != nil || n < 1 || buf[0] != 0x01 {
		t.Fatalf("no plain answer: %v (%d bytes)", err, n)
	}
	h, p, err := wire.ParsePacket(buf[1:n])
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

// halfOpen validates its address with the cookie the server sends and
// is answered ConnectAccepted, then never sends ClientFinished; a forged
// cookie sent first fails.
func halfOpen(t *testing.T, srv *host.Server, r rawUDP, forged []byte) {
	t.Helper()
	hs, err := handshake.NewClientHandshake4(nil)
	if err != nil {
		t.Fatal(err)
	}
	if forged != nil {
		r.send(t, srv, connectDatagram(hs.Hello4(forged)))
		if h, _ := r.answer(t); h.Type != wire.TypeCookieReply {
			t.Fatalf("a forged cookie answered with %v, want a fresh CookieReply", h.Type)
		}
	}
	r.send(t, srv, connectDatagram(hs.Hello4(nil)))
	h, p := r.answer(t)
	cr, err := handshake.ParseCookieReply(p)
	if h.Type != wire.TypeCookieReply || err != nil {
		t.Fatalf("answer %v: %v", h.Type, err)
	}
	r.send(t, srv, connectDatagram(hs.Hello4(cr.Cookie)))
	if h, _ := r.answer(t); h.Type != wire.TypeConnectAccepted {
		t.Fatalf("a validated hello answered with %v", h.Type)
	}
}
