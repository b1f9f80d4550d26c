// Command netrig runs the real-network test rig by hand: it builds the
// namespaces (a server, a NAT router, clients on shaped links) and probes
// them, loads them, or holds them up for programs of your own. Linux, as
// root. See docs/netrig.md.
//
//	go run ./internal/netrig/cmd/netrig profiles
//	go run ./internal/netrig/cmd/netrig probe -profile mobile -clients 2
//	go run ./internal/netrig/cmd/netrig blast -profile bad
//	go run ./internal/netrig/cmd/netrig up -profile mobile -server 'sparkhost run …'
//	go run ./internal/netrig/cmd/netrig sweep
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/sparkhost/sparkhost/internal/netrig"
)

const usage = `usage: netrig <command> [flags]

commands:
  profiles   print the link profiles
  probe      echo UDP probes from every client to the server; print RTT and loss
  blast      load each client's link one way, flat out or at -load; print what got through
  up         hold a rig up, run -server and -client commands in it, take commands on stdin
  sweep      remove the namespaces of rigs whose process died

run "netrig <command> -h" for its flags`

func main() {
	// The rig re-runs this binary inside the server's namespace as its echo
	// server.
	netrig.ServeEchoIfAsked()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"profiles": profiles, "probe": probe, "blast": blast, "up": up, "sweep": sweep,
	}
	run, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "netrig %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// rigFlags are the flags that say what rig to build.
type rigFlags struct {
	profile              string
	clients              int
	nat                  bool
	seed                 uint64
	delay, jitter, queue time.Duration
	loss, dup, reorder   float64
	rate                 int64
	quiet                bool
	lifetime             time.Duration
}

func (f *rigFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.profile, "profile", "none", "link profile of every client: none, home, mobile, bad")
	fs.IntVar(&f.clients, "clients", 1, "client namespaces, each on its own link")
	fs.BoolVar(&f.nat, "nat", true, "masquerade the clients behind the router")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the links' impairment")
	fs.DurationVar(&f.delay, "delay", -1, "override the profile's round-trip delay")
	fs.DurationVar(&f.jitter, "jitter", -1, "override the profile's round-trip jitter (±)")
	fs.DurationVar(&f.queue, "queue", -1, "override the profile's bottleneck queue")
	fs.Float64Var(&f.loss, "loss", -1, "override the profile's loss each way (0..1)")
	fs.Float64Var(&f.dup, "duplicate", -1, "override the profile's duplication each way (0..1)")
	fs.Float64Var(&f.reorder, "reorder", -1, "override the profile's reordering each way (0..1)")
	fs.Int64Var(&f.rate, "rate", -1, "override the profile's rate each way, bit/s (0: uncapped)")
	fs.BoolVar(&f.quiet, "q", false, "do not print the rig's log")
	fs.DurationVar(&f.lifetime, "for", 10*time.Minute, "tear the rig down after this long at most")
}

// link is the profile the flags describe.
func (f *rigFlags) link() (netrig.Profile, error) {
	p, err := netrig.ProfileByName(f.profile)
	if err != nil {
		return p, err
	}
	custom := false
	set := func(ok bool, apply func()) {
		if ok {
			apply()
			custom = true
		}
	}
	set(f.delay >= 0, func() { p.Delay = f.delay })
	set(f.jitter >= 0, func() { p.Jitter = f.jitter })
	set(f.queue >= 0, func() { p.Queue = f.queue })
	set(f.loss >= 0, func() { p.Loss = f.loss })
	set(f.dup >= 0, func() { p.Duplicate = f.dup })
	set(f.reorder >= 0, func() { p.Reorder = f.reorder })
	set(f.rate >= 0, func() { p.Rate = f.rate })
	if custom {
		p.Name += "+custom"
	}
	return p, p.Validate()
}

func (f *rigFlags) start() (*netrig.Rig, error) {
	p, err := f.link()
	if err != nil {
		return nil, err
	}
	if err := netrig.Available(); err != nil {
		return nil, fmt.Errorf("the rig cannot run here: %w (it needs root, ip, tc, nft, conntrack and /dev/net/tun)", err)
	}
	cfg := netrig.Config{Clients: f.clients, Profile: p, NAT: f.nat, Seed: f.seed, Lifetime: f.lifetime}
	if !f.quiet {
		cfg.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}
	return netrig.Start(cfg)
}

func profiles(args []string) error {
	fs := flag.NewFlagSet("profiles", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	names := make([]string, 0, len(netrig.Profiles))
	for n := range netrig.Profiles {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		return netrig.Profiles[names[i]].Delay < netrig.Profiles[names[j]].Delay
	})
	for _, n := range names {
		fmt.Println(netrig.Profiles[n])
	}
	return nil
}

func sweep(args []string) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	removed, err := netrig.Sweep()
	for _, n := range removed {
		fmt.Println("removed", n)
	}
	if err == nil && len(removed) == 0 {
		fmt.Println("no namespaces of dead rigs")
	}
	return err
}
