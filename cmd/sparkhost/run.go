package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"golang.org/x/term"
)

const runUsage = `usage: sparkhost run [--module NAME|PATH]... [--config FILE] [--port N] [--bind ADDR]
                     [--data-dir DIR] [--max-clients N] [--internet]
                     [--rooms --mode NAME|PATH...]

Starts a dedicated server. Without --config the built-in defaults apply (the
same values as the repository's config.toml). Flags override the file;
SPARK_NETWORK_BIND_ADDRESS overrides the file's bind address, --bind overrides
both. Admin commands are read from stdin (at a terminal: a prompt with line
editing and history; Ctrl-D ends it, Ctrl-C stops the server) and from
DATA_DIR/admin.sock (sparkhost admin COMMAND).

SIGINT and SIGTERM stop the server at once (players are told ServerShutdown).
'sparkhost admin drain [DEADLINE]' stops it gracefully: nobody new is
admitted, matches in progress run to their end (the mmo hands its characters
to a neighbour area server), then it exits 0. Under Agones (agones.enabled)
the first SIGTERM drains for at most agones.drain_seconds; a second one stops
at once.

By default the server serves loopback or one LAN only. --internet (or
network.exposure = "internet") opts into facing the internet: it allows a
wildcard, public or IPv6 bind (e.g. --internet --bind ::), speaks protocol v4
only and makes every client prove its address before any handshake work.

Without --rooms the server runs one match, a room every admitted client
joins, with the --module modules. --rooms (rooms.enabled) gives it a lobby:
clients list, create and join rooms, each running one of the --mode modules
(rooms.modes) with its own match, entities and module instance; --module
modules then run for the whole server beside the rooms. A mode given by path
(--mode ./scripts/tag.lua) is offered under the name its module declares
(tag); one given by name keeps that name.
`

// moduleFlags collects repeated --module values.
type moduleFlags []string

func (m *moduleFlags) String() string     { return strings.Join(*m, ",") }
func (m *moduleFlags) Set(v string) error { *m = append(*m, v); return nil }

func runCommand(args []string) int {
	return runServer(context.Background(), args, os.Stdin, os.Stdout, os.Stderr)
}

// runServer is `sparkhost run` with injectable streams (tests).
func runServer(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, runUsage); fs.PrintDefaults() }
	configPath := fs.String("config", "", "config file (default: built-in defaults)")
	port := fs.Int("port", 27015, "UDP game port (0 = any free port)")
	bind := fs.String("bind", "", "bind address: 127.0.0.1 or an RFC1918 host/prefix like 192.168.1.20/24")
	dataDir := fs.String("data-dir", "data", "data directory: identity key, bans, admin socket")
	maxClients := fs.Int("max-clients", 32, "client slots")
	internet := fs.Bool("internet", false, `internet mode (network.exposure = "internet"): wildcard, public and IPv6 binds; v4 clients with address validation only`)
	var modules, modes moduleFlags
	fs.Var(&modules, "module", "game module to load, by name or path (repeatable)")
	rooms := fs.Bool("rooms", false, "a lobby of rooms (rooms.enabled); needs a --mode or rooms.modes")
	fs.Var(&modes, "mode", "a module rooms may run, by name or path (repeatable; rooms.modes)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sparkhost run: unexpected argument %q; see sparkhost run --help\n", fs.Arg(0))
		return 2
	}

	var cfg config.Config
	var err error
	if *configPath != "" {
		cfg, err = config.Load(*configPath)
	} else {
		cfg = config.BuiltIn()
	}
	if err != nil {
		fmt.Fprintln(stderr, "sparkhost:", err)
		return 1
	}
	var o config.Overrides
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "port":
			o.Port = port
		case "bind":
			o.Bind = bind
		case "data-dir":
			o.DataDir = dataDir
		case "max-clients":
			o.MaxClients = maxClients
		}
	})
	o.Modules = modules
	o.Internet = *internet
	o.Rooms = *rooms
	o.Modes = modes
	cfg.Apply(o, os.Getenv)
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "sparkhost:", err)
		return 1
	}

	var console io.Reader
	consoleOut, logOut := stdout, stderr
	if f, ok := stdin.(*os.File); ok {
		if at, ok := openAdminTerminal(f, stdout); ok {
			defer at.restore()
			// Answers and log lines go through the line editor, which
			// redraws the prompt and the line being typed below them.
			console, consoleOut = at, at.term
			if ef, ok := stderr.(*os.File); ok && term.IsTerminal(int(ef.Fd())) {
				logOut = at.term
			}
		}
	}
	if console == nil && stdinIsUsable(stdin) {
		console = stdin
	}
	log, closeLog, err := host.NewLogger(cfg.Logging.Level, cfg.Logging.File, logOut)
	if err != nil {
		fmt.Fprintln(stderr, "sparkhost:", err)
		return 1
	}
	defer closeLog()

	opts := host.Options{Config: cfg, Logger: log, Console: console, ConsoleOut: consoleOut, Builtin: builtinLookup, Version: readBuildInfo().Version}
	srv, err := host.New(opts)
	if err != nil {
		fmt.Fprintln(stderr, "sparkhost:", err)
		return 1
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// Before the lines that say the server is up: a signal sent on them
	// must find its handler (the default action of SIGUSR1 and SIGTERM
	// ends the process, skipping the graceful stop).
	watchHeapProfile(ctx, stderr)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	fmt.Fprintf(stdout, "sparkhost listening on %s\n", srv.Addr())
	fmt.Fprintf(stdout, "%s\n", srv.Exposure())
	fmt.Fprintf(stdout, "server identity pin: %s\n", srv.Pin())
	if l := srv.WebLine(); l != "" {
		fmt.Fprintln(stdout, l)
	}
	for _, p := range srv.StartProblems() {
		fmt.Fprintln(stdout, p)
	}
	if a := srv.OpsAddr(); a != nil {
		fmt.Fprintf(stdout, "status page, metrics and probes on http://%s/\n", a)
	}

	go watchSignals(ctx, sigs, stop, srv, cfg.Agones.Enabled, cfg.AgonesDrain(), stderr)
	if err := srv.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "sparkhost:", err)
		return 1
	}
	return 0
}

// watchSignals stops the server on SIGINT and SIGTERM (sigs, notified of
// both). Under Agones
// (agones.enabled) the first SIGTERM — what Kubernetes sends a pod it
// deletes, a rolling update included — starts a drain of at most
// agones.drain_seconds instead (docs/operations.md, "Draining"); a second
// SIGTERM, or SIGINT, stops at once.
func watchSignals(ctx context.Context, sigs <-chan os.Signal, stop context.CancelFunc, srv *host.Server, agones bool, drain time.Duration, stderr io.Writer) {
	draining := false
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-sigs:
			if sig != syscall.SIGTERM || !agones || draining {
				stop()
				return
			}
			draining = true
			go func() {
				out, err := srv.Exec(fmt.Sprintf("drain %s", drain))
				if err != nil {
					fmt.Fprintln(stderr, "sparkhost: SIGTERM: the drain did not start, stopping:", err)
					stop()
					return
				}
				fmt.Fprintln(stderr, "sparkhost: SIGTERM under Agones:", out)
			}()
		}
	}
}

// stdinIsUsable reports whether stdin can carry admin commands: a terminal or
// a pipe/file, not /dev/null (a service with no stdin).
func stdinIsUsable(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return r != nil
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	if fi.Mode()&os.ModeCharDevice != 0 {
		return f.Name() != os.DevNull && !isDevNull(fi)
	}
	return true
}

// isDevNull recognises /dev/null (a character device that is not a terminal).
func isDevNull(fi os.FileInfo) bool {
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}
