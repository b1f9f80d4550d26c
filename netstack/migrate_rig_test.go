package netstack_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/internal/netrig"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The migration scenario on real kernel paths (internal/netrig, NAT router):
// 64 game clients in 8 client namespaces behind the rig's masquerade, each
// with a reliable ordered stream both ways and unreliable state at game
// rates, while the test forces NAT rebindings of the namespaces (every
// session of a namespace moves at each). It counts disconnects, checks
// every stream (nothing lost, repeated or reordered), and measures each
// migration against the session's round trip. SPARK_RIG_REBINDS and
// SPARK_RIG_PROFILE change the number of rebindings (default 100) and the
// profile (default home). SPARK_RIG_NO_MIGRATION=1 is the control: the
// clients do not ask for a connection id (the behaviour before migration),
// and the test then requires that the rebindings end sessions.
//
//	go test -run TestRigMigration -v ./netstack/
func TestRigMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("the rig scenario runs for about a minute")
	}
	rebinds := envInt(t, "SPARK_RIG_REBINDS", 100)
	profile := netrig.Home
	if p := os.Getenv("SPARK_RIG_PROFILE"); p != "" {
		var err error
		if profile, err = netrig.ProfileByName(p); err != nil {
			t.Fatalf("SPARK_RIG_PROFILE: %v", err)
		}
	}
	const namespaces, perNamespace = 8, 8
	rig := netrig.New(t, netrig.Config{Clients: namespaces, Profile: profile, NAT: true})
	sc := newRigScenario(t, rig, namespaces*perNamespace)
	sc.control = os.Getenv("SPARK_RIG_NO_MIGRATION") == "1"
	for i := range namespaces * perNamespace {
		sc.dial(t, i%namespaces, i)
	}
	eventually(t, "every client's connection id", func() bool {
		for _, c := range sc.clients {
			if c.MigrationReady() == sc.control {
				return false
			}
		}
		return true
	})
	stop := sc.play()
	for i := range rebinds {
		time.Sleep(250 * time.Millisecond)
		if err := rig.Rebind(i % namespaces); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // the last moves and the streams' tails
	stop()
	sc.report(t, rebinds)
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// rigScenario is a server in the rig's server namespace and its clients.
type rigScenario struct {
	control  bool // the clients do not migrate (SPARK_RIG_NO_MIGRATION)
	rig      *netrig.Rig
	srv      *netstack.Server
	clients  []*netstack.Client
	toServer []*streamRecorder // by client index
	toClient []*streamRecorder
	byID     map[uint32]int
	gone     atomic.Int64

	sendErrs         atomic.Int64
	sentUp, sentDown atomic.Uint32 // ordered messages each client sent, and the server sent each

	mu    sync.Mutex
	moves []netstack.Migration
}

func newRigScenario(t *testing.T, rig *netrig.Rig, n int) *rigScenario {
	sc := &rigScenario{rig: rig, byID: map[uint32]int{}}
	conn, err := rig.Server.ListenUDP(27015)
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	cfg := netstack.ServerConfig{Bind: rig.Server.Addr.String(), Internet: true, Conn: conn, Identity: priv,
		Registry: soakRegistry(t), Logger: slog.New(slog.DiscardHandler), ConnectBudget: plentyBudget,
		PrefixBudget: plentyBudget, Admission: netstack.AdmissionCaps{PerAddress: -1, PerPrefix: -1}, MaxClients: 128}
	withGame(&cfg)
	cfg.OnMigrated = func(m netstack.Migration) { sc.mu.Lock(); sc.moves = append(sc.moves, m); sc.mu.Unlock() }
	cfg.OnDisconnected = func(netstack.ClientInfo, wire.DisconnectReason, string) { sc.gone.Add(1) }
	if sc.srv, err = netstack.NewServer(cfg); err != nil {
		t.Fatal(err)
	}
	sc.toServer, sc.toClient = make([]*streamRecorder, n), make([]*streamRecorder, n)
	for i := range n {
		sc.toServer[i], sc.toClient[i] = &streamRecorder{}, &streamRecorder{}
	}
	sc.srv.Handle(soakOrdered, func(id uint32, _ *wire.Header, p []byte) { sc.toServer[sc.byID[id]].got(p) })
	sc.srv.Start()
	t.Cleanup(func() { sc.srv.Close() })
	return sc
}

// dial connects client i from namespace ns.
func (sc *rigScenario) dial(t *testing.T, ns, i int) {
	t.Helper()
	conn, err := sc.rig.Client(ns).ListenUDP(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: sc.srv.Addr(), Name: fmt.Sprintf("bot%d", i),
		Pin: sc.srv.Pin(), Conn: conn, Registry: soakRegistry(t), NoMigration: sc.control}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	sc.byID[cli.ID()] = i
	sc.clients = append(sc.clients, cli)
	rec := sc.toClient[i]
	go func() {
		for {
			m, err := cli.Receive(context.Background())
			if err != nil {
				return
			}
			if m.Header.Type == soakOrdered {
				rec.got(m.Payload)
			}
		}
	}()
}

// play runs the game traffic until the returned function is called: each
// client sends 30 inputs a second (unreliable) and 10 reliable ordered
// messages; the server sends each 20 states (unreliable) and 10 reliable
// ordered messages a second.
func (sc *rigScenario) play() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second / 30)
		defer tick.Stop()
		for n := uint32(0); ; n++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			for _, c := range sc.clients {
				_ = c.Send(soakNoise, wire.Unreliable, make([]byte, 29))
				if n%3 == 0 {
					if err := c.Send(soakOrdered, wire.ReliableOrdered, streamPayload(n/3)); err != nil {
						sc.sendErrs.Add(1)
					}
				}
				c.Flush()
				if n%3 == 1 {
					if err := sc.srv.Send(c.ID(), soakOrdered, wire.ReliableOrdered, streamPayload(n/3)); err != nil {
						sc.sendErrs.Add(1)
					}
				}
				if n%3 != 2 {
					_ = sc.srv.Send(c.ID(), soakNoise, wire.Unreliable, make([]byte, 120))
				}
			}
			sc.srv.Flush()
			switch n % 3 {
			case 0:
				sc.sentUp.Add(1)
			case 1:
				sc.sentDown.Add(1)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// report checks the streams and the disconnects and logs the migrations.
func (sc *rigScenario) report(t *testing.T, rebinds int) {
	t.Helper()
	end := time.Now().Add(waitLong)
	for _, c := range sc.clients {
		for c.Unconfirmed() > 0 && time.Now().Before(end) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(500 * time.Millisecond) // the server's last messages' deliveries
	var lost, disorder int
	for i := range sc.clients {
		for r, sent := range map[*streamRecorder]uint32{sc.toServer[i]: sc.sentUp.Load(), sc.toClient[i]: sc.sentDown.Load()} {
			n, errs := r.count()
			disorder += len(errs)
			lost += int(sent) - int(n)
		}
	}
	sc.mu.Lock()
	moves := slices.Clone(sc.moves)
	sc.mu.Unlock()
	var over int
	extra := make([]time.Duration, 0, len(moves))
	for _, m := range moves {
		e := m.Took - m.Ping
		extra = append(extra, e)
		if e > 50*time.Millisecond {
			over++
			t.Logf("slow migration: client %d took %v, round trip %v", m.Client, m.Took, m.Ping)
		}
	}
	slices.Sort(extra)
	pct := func(p float64) time.Duration {
		if len(extra) == 0 {
			return 0
		}
		return extra[min(len(extra)-1, int(p*float64(len(extra))))]
	}
	st := sc.srv.Stats()
	t.Logf("%d rebindings of %d namespaces, %d sessions: %d migrations (server: %d, validations started %d, failed %d, challenges held %d); "+
		"disconnects %d, send errors %d; ordered messages lost %d (of %d each way per client), out of order or repeated %d; migration time beyond the round trip: p50 %v p99 %v max %v; over RTT+50ms: %d",
		rebinds, len(sc.clients)/8, len(sc.clients), len(moves), st.Migrations, st.PathValidationsStarted, st.PathValidationsFailed,
		st.PathChallengesHeld, sc.gone.Load(), sc.sendErrs.Load(), lost, sc.sentUp.Load(), disorder, pct(0.5), pct(0.99), pct(1), over)
	if sc.control {
		if sc.gone.Load() == 0 {
			t.Fatal("control: the rebindings ended no session")
		}
		return
	}
	if sc.gone.Load() != 0 || lost != 0 || disorder != 0 || sc.sendErrs.Load() != 0 {
		t.Fatal("the sessions did not survive the rebindings intact")
	}
	if len(moves) < rebinds {
		t.Fatalf("%d migrations for %d rebindings", len(moves), rebinds)
	}
}
