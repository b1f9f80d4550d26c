package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/module/schemajson"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

const schemaUsage = `usage: sparkhost schema export [--module NAME|PATH]... [--config FILE] [--data-dir DIR] [--out FILE]
       sparkhost schema export --server HOST:PORT [--pin PIN] [--data-dir DIR] [--name NAME] [--timeout D] [--out FILE]
       sparkhost schema gen-ts [--runtime IMPORT] [-o FILE] [SCHEMAS.json]

Writes the module message schemas as JSON (format sparkhost-schemas/1,
docs/schemas.md) to standard output or --out FILE, for client code
generators.

With --module (and --config: its modules.load as well), the modules are
loaded as sparkhost check loads them — Lua run to its manifest, plugins
started and asked — without serving. With --server, the export connects to
a running server as a player (protocol v4; trust as in sparkhost client:
--pin, else known_hosts in --data-dir) and writes the ModuleSchemas table
the server announces (docs/protocol.md §10.2), then leaves.

gen-ts is sparkhost gen-ts: TypeScript codecs from an export
(sparkhost schema gen-ts --help; clients/typescript/README.md).
`

// schemaCommand runs `sparkhost schema`.
func schemaCommand(args []string) int { return schemaMain(args, os.Stdout, os.Stderr) }

func schemaMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "gen-ts" {
		return genTSMain(args[1:], os.Stdin, stdout, stderr)
	}
	if len(args) == 0 || args[0] != "export" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, schemaUsage)
			return 0
		}
		fmt.Fprint(stderr, schemaUsage)
		return 2
	}
	fs := flag.NewFlagSet("schema export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, schemaUsage); fs.PrintDefaults() }
	var mods moduleFlags
	fs.Var(&mods, "module", "a module to load, by name or path (repeatable)")
	configPath := fs.String("config", "", "config file whose modules.load is exported too")
	dataDir := fs.String("data-dir", "", "the modules' data directory; with --server, where known_hosts is")
	server := fs.String("server", "", "export from the running server at HOST:PORT")
	pin := fs.String("pin", "", "with --server: accept only this identity (ed25519:...)")
	name := fs.String("name", "schema-export", "with --server: the player name to connect as")
	timeout := fs.Duration("timeout", 10*time.Second, "with --server: how long to wait for the table")
	outPath := fs.String("out", "", "write to FILE instead of standard output")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sparkhost schema export: unexpected argument %q; see sparkhost schema --help\n", fs.Arg(0))
		return 2
	}
	var schemas []wire.ModuleSchema
	var err error
	switch {
	case *server != "" && (len(mods) > 0 || *configPath != ""):
		fmt.Fprintln(stderr, "sparkhost schema export: give --server or --module/--config, not both")
		return 2
	case *server != "":
		schemas, err = schemasFromServer(*server, *name, *pin, *dataDir, *timeout)
	case len(mods) > 0 || *configPath != "":
		schemas, err = schemasFromModules(*configPath, *dataDir, mods)
	default:
		fmt.Fprintln(stderr, "sparkhost schema export: say where the schemas come from: --module FILE or --server HOST:PORT")
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "sparkhost schema export:", err)
		return 1
	}
	var b bytes.Buffer
	if err := schemajson.Write(&b, schemas); err != nil {
		fmt.Fprintln(stderr, "sparkhost schema export:", err)
		return 1
	}
	if *outPath == "" {
		_, err = stdout.Write(b.Bytes())
	} else {
		err = os.WriteFile(*outPath, b.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sparkhost schema export:", err)
		return 1
	}
	return 0
}

// schemasFromModules loads the modules as sparkhost check does and returns
// what they registered; any module that fails to load is an error.
func schemasFromModules(configPath, dataDir string, mods []string) ([]wire.ModuleSchema, error) {
	var cfg config.Config
	var err error
	if configPath != "" {
		cfg, err = config.Load(configPath)
	} else {
		cfg = config.BuiltIn()
		cfg.Modules.Load = nil
	}
	if err == nil && dataDir != "" {
		cfg.Apply(config.Overrides{DataDir: &dataDir}, os.Getenv)
		err = cfg.Validate()
	}
	if err != nil {
		return nil, err
	}
	checks, schemas := host.CheckModuleSchemas(cfg, host.Options{Builtin: builtinLookup}, mods)
	var errs []error
	for _, c := range checks {
		if c.Err != nil {
			errs = append(errs, fmt.Errorf("%s", c))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w\nfix the module (sparkhost check shows the same) and export again", errors.Join(errs...))
	}
	return schemas, nil
}

// schemasFromServer connects to addr as a player and returns the first
// ModuleSchemas table the server announces.
func schemasFromServer(addr, name, pin, dataDir string, timeout time.Duration) ([]wire.ModuleSchema, error) {
	if pin == "" {
		dir, err := clientDataDir(dataDir)
		if err != nil {
			return nil, err
		}
		dataDir = dir
	}
	con := client.NewConsole(client.Config{DataDir: dataDir, Pin: pin, Protocol: wire.ProtocolVersion4})
	defer con.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	m, err := con.ServerSchemas(ctx, addr, name)
	if err != nil {
		return nil, err
	}
	return m.Types, nil
}
