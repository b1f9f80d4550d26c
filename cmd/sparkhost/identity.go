package main

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/netstack/trust"
)

const identityUsage = `usage: sparkhost identity [--data-dir DIR | --config FILE]

Prints the server identity pin ("ed25519:…") that clients pin, creating the
identity key (DIR/identity.key, mode 0600) first if the data directory has
none, exactly as the first sparkhost run would. Run it before the first
start to hand the pin out (a fleet's tooling, a client's --pin), or any
time to read it. The pin alone goes to standard output.
`

func identityCommand(args []string) int { return identityMain(args, os.Stdout, os.Stderr) }

func identityMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("identity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, identityUsage); fs.PrintDefaults() }
	dataDir := fs.String("data-dir", "", "data directory (default: server.data_dir of the config)")
	configPath := fs.String("config", "", "config file whose server.data_dir to use (default: built-in defaults)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sparkhost identity: unexpected argument %q; see sparkhost identity --help\n", fs.Arg(0))
		return 2
	}
	dir := *dataDir
	if dir == "" {
		cfg := config.BuiltIn()
		if *configPath != "" {
			var err error
			if cfg, err = config.Load(*configPath); err != nil {
				fmt.Fprintln(stderr, "sparkhost identity:", err)
				return 1
			}
		}
		dir = cfg.Server.DataDir
	}
	priv, created, err := trust.LoadOrCreateIdentity(dir)
	if err != nil {
		fmt.Fprintf(stderr, "sparkhost identity: %v\n", err)
		return 1
	}
	if created {
		fmt.Fprintf(stderr, "created the server identity %s (mode 0600); keep it: clients pin it\n", filepath.Join(dir, trust.IdentityFile))
	}
	fmt.Fprintln(stdout, trust.Pin(priv.Public().(ed25519.PublicKey)))
	return 0
}
