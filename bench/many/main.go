// Command many measures many clients with many messages in flight through
// one sparkhost server core: each of -clients clients keeps -inflight
// messages of -size bytes in flight to an echo handler (every echo replaced
// by a new message), sealed as always, on the Reliable channel or, with
// -channel unreliable, the Unreliable one (the server answers on the channel
// a message came on; an unreliable message without echo for -loss-after is
// counted lost and replaced, so that -inflight stay in flight). The server
// is one process with GOMAXPROCS=1 pinned to CPU 0; the clients are
// -client-processes processes pinned to CPU 1 (taskset), every client a
// netstack.Client with its own loopback address 127.2.x.y. By default
// (-clients-socket shared) the clients of a process share one UDP socket:
// each sends from its own address (IP_PKTINFO), the socket's reader hands
// every datagram to the client it was sent to, and datagrams leave and
// arrive in sendmmsg and recvmmsg batches; -clients-socket per-client gives
// every client a socket of its own, as before (one recvfrom per datagram, a
// sendto per flush). The server sees 1,000 addresses either way. A client
// answers all the echoes that have arrived at once and flushes once (a game
// client sends once per frame), so that messages share datagrams both ways.
// The clients' timers run every 50 ms (-client-service,
// ClientConfig.ServiceInterval; the library's 10 ms costs 1,000 clients on
// one core 100,000 wake-ups a second and fires their retransmissions on
// round trips that the loaded core only delays).
//
//	cd bench && go run ./many                    # 1,000 clients × 10 reliable in flight, 32 B, shared sockets
//	go run ./many -channel unreliable            # the same, unreliable
//	go run ./many -clients-socket per-client     # a socket per client
//	go run ./many -clients 200 -duration 3s      # a smaller run
//	go run ./many -profile /tmp/prof             # CPU profiles of every process (the server's: the measured window)
//	go run ./many -server-cgroup /sys/fs/cgroup/cpu/sparkbench  # the server in a cgroup whose CPU quota holds it to part of its core
//
// It prints the messages echoed per second (counted by the clients: a
// message counts when its echo arrives), p50/p99 round trip (from the
// Send of a message to the arrival of its echo), the server process's CPU
// time per message and its share of its core over the measured window, the
// server's datagrams per second each way with the messages they carried,
// the unreliable messages lost, and the shared sockets' datagrams per
// system call.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// echoType is the message type of the echo.
const echoType wire.MessageType = 1000

var (
	profileDir   string
	clientCPUs   string
	serverCgroup string
	serverNice   int
)

// clientOpts is what a client process is told.
type clientOpts struct {
	addr, pin        string
	clients, first   int // this process's clients: first .. first+clients-1
	inflight, size   int
	serviceInterval  time.Duration
	processes, procs int // client processes, and GOMAXPROCS of each
	channel          wire.Channel
	socket           string        // "shared" or "per-client"
	lossAfter        time.Duration // an unreliable message without echo for this long is lost
	noMigration      bool
	engine           string // "pump" (one goroutine drives the process's clients) or "goroutines"
}

func main() {
	role := flag.String("role", "", "internal: server or client")
	var o clientOpts
	flag.StringVar(&o.addr, "addr", "", "internal: the server's address")
	flag.StringVar(&o.pin, "pin", "", "internal: the server's pin")
	flag.IntVar(&o.first, "first", 0, "internal: the index of this process's first client")
	flag.IntVar(&o.clients, "clients", 1000, "clients")
	flag.IntVar(&o.inflight, "inflight", 10, "reliable messages in flight per client")
	flag.IntVar(&o.size, "size", 32, "message size in bytes (at least 12)")
	flag.DurationVar(&o.serviceInterval, "client-service", 50*time.Millisecond, "the clients' ClientConfig.ServiceInterval (0: the library's default, 10 ms)")
	warmup := flag.Duration("warmup", 2*time.Second, "time before the measured window")
	duration := flag.Duration("duration", 5*time.Second, "the measured window")
	flag.StringVar(&profileDir, "profile", "", "write CPU profiles of every process to this directory")
	flag.StringVar(&clientCPUs, "client-cpus", "1", "the CPUs of the clients' processes (taskset list)")
	flag.StringVar(&serverCgroup, "server-cgroup", "", "a cgroup directory (e.g. /sys/fs/cgroup/cpu/bench with a cpu.cfs_quota_us) the server process is moved into: a server held to part of its core")
	flag.IntVar(&serverNice, "server-nice", 0, "the server process's nice value (e.g. -20, with -client-cpus 0,1: the clients get what the server leaves of its core, and the other core)")
	flag.IntVar(&o.procs, "client-procs", 1, "GOMAXPROCS of each client process")
	flag.IntVar(&o.processes, "client-processes", 4, "client processes (the clients are shared out among them)")
	channel := flag.String("channel", "reliable", "the messages' channel: reliable or unreliable")
	flag.StringVar(&o.socket, "clients-socket", "shared", "shared: a client process's clients share one UDP socket (each still sends from its own address); per-client: a socket each")
	flag.DurationVar(&o.lossAfter, "loss-after", 250*time.Millisecond, "unreliable: a message without echo for this long is counted lost and replaced")
	flag.StringVar(&o.engine, "client-engine", "pump", "pump: one goroutine per client process drives its clients (Polled, with a shared socket); goroutines: each client has its own receive goroutine and a loop goroutine")
	flag.BoolVar(&o.noMigration, "no-migration", false, "per-client: the clients ask for no connection id (as over a shared socket, where they never do)")
	flag.Parse()
	o.size = max(o.size, 12)
	switch *channel {
	case "reliable":
		o.channel = wire.Reliable
	case "unreliable":
		o.channel = wire.Unreliable
	default:
		fmt.Fprintln(os.Stderr, "many: -channel is reliable or unreliable")
		os.Exit(2)
	}
	if o.socket != "shared" && o.socket != "per-client" {
		fmt.Fprintln(os.Stderr, "many: -clients-socket is shared or per-client")
		os.Exit(2)
	}
	if o.engine != "pump" && o.engine != "goroutines" || o.engine == "pump" && o.socket != "shared" {
		fmt.Fprintln(os.Stderr, "many: -client-engine is pump (with -clients-socket shared) or goroutines")
		os.Exit(2)
	}
	o.lossAfter = max(o.lossAfter, 10*time.Millisecond)
	var err error
	switch *role {
	case "":
		err = orchestrate(o, *warmup, *duration)
	case "server":
		err = serve(o.clients, o.channel)
	case "client":
		err = client(o)
	default:
		err = fmt.Errorf("role %q", *role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "many:", err)
		os.Exit(1)
	}
}

// echoSchema is the echo message on channel ch.
func echoSchema(ch wire.Channel) wire.Schema {
	return wire.Schema{ID: echoType, Name: "Echo", Direction: wire.BothDirections, Channel: ch,
		MinLen: 12, MaxLen: 1100, StringFieldOffset: wire.NoStringFields}
}

// profile starts a CPU profile of this process when -profile is set.
func profile(name string) func() {
	if profileDir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(profileDir, name+".pprof"))
	if err != nil || pprof.StartCPUProfile(f) != nil {
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
