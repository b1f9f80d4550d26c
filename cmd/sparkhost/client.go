package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/modules/mmo/mmoclient"
	"github.com/sparkhost/sparkhost/netstack/trust"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

const clientUsage = `usage: sparkhost client [--data-dir DIR] [--pin PIN] [--protocol N] [--exec "CMD; CMD..."]

Starts the player console. Commands come from --exec (run in order, then
exit), else from standard input: at a terminal, a prompt with line editing
and history (arrow keys; Ctrl-C discards the line or interrupts the running
command, Ctrl-D or quit leaves); otherwise a script. A script stops at its
first failed command; the exit code is 0 when every command succeeded, 1
otherwise (2 for bad flags). quit and disconnect leave the server once it
confirmed what was sent (a line said just before), waiting at most 1 s; when
it did not, they fail.

flags:
  --data-dir DIR   holds known_hosts (default: the user config dir + /sparkhost)
  --pin PIN        accept only this server identity (ed25519:...); without it
                   known_hosts decides, trusting a new server on first use
  --protocol N     4: protocol v4 only, never fall back (a v3 server is
                   refused); 3: protocol v3 only; default: v4, falling back
                   to v3 when the server says it speaks only v3
  --exec SCRIPT    commands separated by ';' (quotes respected)

console commands:
`

// clientCommand runs `sparkhost client`.
func clientCommand(args []string) int {
	return runClient(args, os.Stdin, os.Stdout, os.Stderr)
}

// runClient is clientCommand with its streams injected for tests.
func runClient(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // usage is printed below, to stdout for --help
	dataDir := fs.String("data-dir", "", "")
	pin := fs.String("pin", "", "")
	script := fs.String("exec", "", "")
	protocol := fs.Uint("protocol", 0, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, clientUsageText())
			return 0
		}
		fmt.Fprintf(stderr, "sparkhost client: %v\n\n%s", err, clientUsageText())
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sparkhost client: unexpected argument %q; commands go in --exec or on standard input\n", fs.Arg(0))
		return 2
	}
	if *pin != "" {
		if _, err := trust.ParsePin(*pin); err != nil {
			fmt.Fprintf(stderr, "sparkhost client: --pin: %v\n", err)
			return 2
		}
	}
	if *protocol != 0 && *protocol != 3 && *protocol != 4 {
		fmt.Fprintf(stderr, "sparkhost client: --protocol %d: want 3 or 4 (default: v4 with fallback to v3)\n", *protocol)
		return 2
	}
	dir, err := clientDataDir(*dataDir)
	if err != nil {
		fmt.Fprintf(stderr, "sparkhost client: %v\n", err)
		return 1
	}
	var lines []string
	hasExec := flagSet(fs, "exec")
	if hasExec {
		if lines, err = client.SplitScript(*script); err != nil {
			fmt.Fprintf(stderr, "sparkhost client: --exec: %v\n", err)
			return 2
		}
	}

	interactive := !hasExec && client.IsTerminal(stdin)
	stopSignals := []os.Signal{syscall.SIGTERM}
	if !interactive {
		stopSignals = append(stopSignals, os.Interrupt)
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	con, err := newConsole(client.Config{Out: stdout, DataDir: dir, Pin: *pin, Protocol: uint16(*protocol)})
	if err != nil {
		fmt.Fprintf(stderr, "sparkhost client: %v\n", err)
		return 1
	}
	defer con.Close() // leaves the server with ClientQuit
	if hasExec {
		// Close on a signal ends a running wait or sleep; the script then fails.
		defer context.AfterFunc(ctx, con.Close)()
		return con.RunScript(lines)
	}
	if interactive {
		defer interruptOnSIGINT(ctx, con)()
	}
	return con.RunInteractive(ctx, stdin)
}

// interruptOnSIGINT makes Ctrl-C while a command runs (the terminal is then
// in its usual mode, so the key is SIGINT) end that command, not the
// console; it returns the undo.
func interruptOnSIGINT(ctx context.Context, con *client.Console) func() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sig:
				con.Interrupt()
			case <-ctx.Done():
				return
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(sig); close(done) }
}

// clientDataDir returns dir, or the default under the user config directory,
// created with mode 0700.
func clientDataDir(dir string) (string, error) {
	if dir == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("no user config directory (%v); pass --data-dir", err)
		}
		dir = filepath.Join(base, "sparkhost")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the data directory: %w", err)
	}
	return dir, nil
}

// flagSet reports whether the flag was given, even as "".
func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// clientUsageText is the usage with the console's command list.
func clientUsageText() string {
	var help bytes.Buffer
	con, _ := newConsole(client.Config{Out: &help})
	defer con.Close()
	_ = con.Exec("help")
	return clientUsage + help.String()
}

// newConsole is the player console with the commands of the built-in
// modules (mmo_session_*) and their message types (a client must know
// every type a server sends it reliably: deathmatch's too, for its rooms).
func newConsole(cfg client.Config) (*client.Console, error) {
	cfg.Registry = gamemsg.NewRegistry()
	if err := mmoclient.RegisterTypes(cfg.Registry); err != nil {
		return nil, err
	}
	for _, s := range deathmatch.Schemas() {
		if err := cfg.Registry.Register(deathmatch.Name, s); err != nil {
			return nil, err
		}
	}
	con := client.NewConsole(cfg)
	if err := mmoclient.Register(con, mmoclient.Options{}); err != nil {
		con.Close()
		return nil, err
	}
	return con, nil
}
