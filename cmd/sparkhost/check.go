package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
)

const checkUsage = `usage: sparkhost check [--config FILE] [--module NAME|PATH]... [--data-dir DIR]
                       [--rooms --mode NAME|PATH...]

Checks a deployment without serving: validates the config, then loads every
module the server would load (modules.load, then each --module, then with
--rooms or rooms.enabled every room mode, in a room of its own) exactly as
run does — Lua scripts compiled and run to their manifest, Go plugins
started and their manifests read — and stops them again. No socket is
opened. Prints one line per module and one per problem; exits 1 if there is
any problem.
`

func checkCommand(args []string) int { return checkMain(args, os.Stdout, os.Stderr) }

func checkMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, checkUsage); fs.PrintDefaults() }
	configPath := fs.String("config", "", "config file (default: built-in defaults)")
	dataDir := fs.String("data-dir", "", "data directory the modules see (default: server.data_dir)")
	var modules, modes moduleFlags
	fs.Var(&modules, "module", "a module to check besides modules.load, by name or path (repeatable)")
	rooms := fs.Bool("rooms", false, "check as a server with a lobby (rooms.enabled)")
	fs.Var(&modes, "mode", "a room mode (replaces rooms.modes; repeatable)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sparkhost check: unexpected argument %q; see sparkhost check --help\n", fs.Arg(0))
		return 2
	}
	var cfg config.Config
	var err error
	name := "config.toml (built-in)"
	if *configPath != "" {
		name = *configPath
		cfg, err = config.Load(*configPath)
	} else {
		cfg = config.BuiltIn()
	}
	if err == nil && (*dataDir != "" || *rooms || len(modes) > 0) {
		o := config.Overrides{Rooms: *rooms, Modes: modes}
		if *dataDir != "" {
			o.DataDir = dataDir
		}
		cfg.Apply(o, os.Getenv)
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintln(stderr, "sparkhost check:", err)
		return 1
	}
	fmt.Fprintf(stdout, "config %s: ok\n", name)
	problems := 0
	for _, c := range host.CheckModules(cfg, host.Options{Builtin: builtinLookup}, modules) {
		if c.Err != nil {
			problems++
			fmt.Fprintln(stderr, "sparkhost check:", c)
			continue
		}
		fmt.Fprintln(stdout, c)
	}
	if problems > 0 {
		fmt.Fprintf(stderr, "sparkhost check: %d problem(s); fix them before sparkhost run\n", problems)
		return 1
	}
	fmt.Fprintln(stdout, "check passed")
	return 0
}
