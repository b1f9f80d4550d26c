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
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sparkhost/sparkhost/host/discovery"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

const discoverUsage = `usage: sparkhost discover [--port N] [--broadcast] [--target ADDR]... [--wait DURATION]

Lists the sparkhost servers that answer LAN discovery (docs/protocol.md §12):
by default those of this machine (127.0.0.1) only; --broadcast also asks the
local network segment (255.255.255.255), --target asks the hosts you name.
Answers are hints, not proof: connecting still checks the server's identity
pin.

flags:
  --port N           discovery port of the servers (default 27016)
  --broadcast        also ask every host of the local segment (255.255.255.255)
  --target ADDR      ask ADDR (IPv4, optionally with :PORT); repeatable
  --wait DURATION    how long to collect answers, e.g. 500ms (default 1s, max 30s)
`

// The discovery protocol is answered for every protocol version; these are
// the game protocol versions this build can join.
var joinableVersions = [...]uint16{3, 4}

// targetList is the repeatable --target flag. Port-less entries take --port
// after all flags are parsed, whatever their order.
type targetList []string

func (l *targetList) String() string { return strings.Join(*l, ",") }

func (l *targetList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// discoverCommand runs `sparkhost discover`.
func discoverCommand(args []string) int {
	return discover(args, os.Stdout, os.Stderr)
}

func discover(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("discover", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported below, help goes to stdout
	port := fs.Int("port", discovery.DefaultPort, "")
	wait := fs.Duration("wait", discovery.DefaultWait, "")
	broadcast := fs.Bool("broadcast", false, "")
	var targetText targetList
	fs.Var(&targetText, "target", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, discoverUsage)
			return 0
		}
		return usageError(stderr, err.Error())
	}
	switch {
	case fs.NArg() > 0:
		return usageError(stderr, fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	case *port < 1 || *port > 65535:
		return usageError(stderr, fmt.Sprintf("--port %d: must be 1..65535", *port))
	case *wait < 10*time.Millisecond || *wait > 30*time.Second:
		return usageError(stderr, fmt.Sprintf("--wait %v: must be 10ms..30s", *wait))
	}
	targets, err := parseTargets(targetText, uint16(*port), *broadcast)
	if err != nil {
		return usageError(stderr, err.Error())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := discovery.Query(ctx, targets, *wait)
	if errors.Is(err, discovery.ErrBroadcastUnavailable) {
		targets = withoutBroadcast(targets)
		if len(targets) == 0 {
			fmt.Fprintf(stderr, "sparkhost discover: %v; give a --target host to ask it directly\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "sparkhost discover: %v; asking %s only\n", err, joinTargets(targets))
		results, err = discovery.Query(ctx, targets, *wait)
	}
	var sendErr *discovery.SendError
	switch {
	case errors.As(err, &sendErr):
		fmt.Fprintln(stderr, "sparkhost discover: warning:", err)
	case errors.Is(err, context.Canceled):
	case err != nil:
		fmt.Fprintln(stderr, "sparkhost discover:", err)
		return 1
	}
	printServers(stdout, stderr, results)
	return 0
}

func usageError(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "sparkhost discover: %s; run 'sparkhost discover --help'\n", msg)
	return 2
}

// parseTargets turns --target values into addresses, adding the limited
// broadcast at port with broadcast; with neither, it returns this machine
// at port. Only IPv4 literals are accepted: names are never resolved (as
// for the bind address, §7).
func parseTargets(texts []string, port uint16, broadcast bool) ([]netip.AddrPort, error) {
	var targets []netip.AddrPort
	if broadcast {
		targets = append(targets, netip.AddrPortFrom(discovery.LimitedBroadcast, port))
	}
	if len(texts) == 0 && !broadcast {
		return []netip.AddrPort{netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port)}, nil
	}
	if len(texts)+len(targets) > discovery.MaxTargets {
		return nil, fmt.Errorf("%d targets: at most %d", len(texts)+len(targets), discovery.MaxTargets)
	}
	for _, s := range texts {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("--target %q: want an IPv4 address, optionally with :PORT, like 192.168.1.20:27016", s)
			}
			ap = netip.AddrPortFrom(a, port)
		}
		if a := ap.Addr(); !a.Is4() || a.IsUnspecified() || a.IsMulticast() || ap.Port() == 0 {
			return nil, fmt.Errorf("--target %q: want an IPv4 host or broadcast address and a port from 1 to 65535", s)
		}
		targets = append(targets, ap)
	}
	return targets, nil
}

func withoutBroadcast(targets []netip.AddrPort) []netip.AddrPort {
	var kept []netip.AddrPort
	for _, t := range targets {
		if t.Addr() != discovery.LimitedBroadcast {
			kept = append(kept, t)
		}
	}
	return kept
}

func joinTargets(targets []netip.AddrPort) string {
	s := make([]string, len(targets))
	for i, t := range targets {
		s[i] = t.String()
	}
	return strings.Join(s, ", ")
}

// printServers writes the table: a header and one line per server, columns
// separated by at least two spaces; notes on other protocol versions go to
// stderr so that stdout stays one server per line.
func printServers(stdout, stderr io.Writer, results []discovery.Result) {
	if len(results) == 0 {
		fmt.Fprintln(stdout, "no servers found")
		return
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMAP\tMODE\tPLAYERS\tADDRESS")
	for _, r := range results {
		game := netip.AddrPortFrom(r.From.Addr(), r.Info.GamePort)
		where, mode := modeColumns(r.Info)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\n", orDash(r.Info.Name), orDash(where),
			mode, r.Info.Players, r.Info.MaxPlayers, game)
	}
	tw.Flush()
	for _, r := range results {
		if !slices.Contains(joinableVersions[:], r.Info.ProtocolVersion) {
			fmt.Fprintf(stderr, "note: %s at %s speaks protocol v%d; this build speaks v3 and v4 and cannot join it\n",
				orDash(r.Info.Name), r.From.Addr(), r.Info.ProtocolVersion)
		}
	}
}

// modeColumns is what the MAP and MODE columns show: a match's map and
// mode, or, for a server whose module is not a match (mode Custom, the map
// field "MODULE/AREA", docs/protocol.md §12), its area and the module's
// name.
func modeColumns(info discovery.Info) (where, mode string) {
	name, area, world := strings.Cut(info.Map, "/")
	if gamemsg.GameMode(info.Mode) != gamemsg.ModeCustom || !world {
		return info.Map, gamemsg.GameMode(info.Mode).String()
	}
	return area, name
}

// orDash keeps empty text visible as a column.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
