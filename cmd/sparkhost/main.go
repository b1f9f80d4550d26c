// Command sparkhost is the game-server host: `sparkhost run` starts a
// dedicated server, `sparkhost admin` talks to a running one, `sparkhost
// client` is the player/test console and `sparkhost discover` lists LAN servers.
package main

import (
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = defaultVersion

const defaultVersion = "0.2.0-dev"

const usage = `usage: sparkhost COMMAND [FLAGS]

commands:
  run        start a dedicated server (sparkhost run --help)
  admin      run one admin command against a running server (sparkhost admin --help)
  client     player/test console (sparkhost client --help)
  discover   list servers on this machine and the LAN (sparkhost discover --help)
  module     describe a Go plugin module (sparkhost module --help)
  plugin     start a Go plugin of your own, in its own module (sparkhost plugin --help)
  bots       run headless deathmatch bots against a server (sparkhost bots --help)
  check      validate the config and load every module without serving (sparkhost check --help)
  schema     export the module message schemas as JSON; schema gen-ts = gen-ts (sparkhost schema --help)
  health     probe a running server's /healthz (sparkhost health --help)
  identity   print the server identity pin, creating the key first if missing (sparkhost identity --help)
  mmo        mmo world tools: world-key FILE creates an area world's key (sparkhost mmo --help)
  gen-ts     generate TypeScript client codecs from a schema export (also: sparkhost schema gen-ts)
  version    print the version, VCS revision and Go version
`

func main() {
	os.Exit(dispatch(os.Args[1:]))
}

func dispatch(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runCommand(args[1:])
	case "admin":
		return adminCommand(args[1:])
	case "client":
		return clientCommand(args[1:])
	case "discover":
		return discoverCommand(args[1:])
	case "module":
		return moduleCommand(args[1:])
	case "plugin":
		return pluginCommand(args[1:])
	case "bots":
		return botsCommand(args[1:])
	case serveModuleCommand:
		return serveModule(args[1:])
	case "check":
		return checkCommand(args[1:])
	case "schema":
		return schemaCommand(args[1:])
	case "health":
		return healthCommand(args[1:])
	case "identity":
		return identityCommand(args[1:])
	case "gen-ts":
		return genTSCommand(args[1:])
	case "mmo":
		return mmoCommand(args[1:], os.Stdout, os.Stderr)
	case "version", "--version":
		return versionCommand(args[1:])
	case "help", "-h", "--help":
		fmt.Print(usage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "sparkhost: unknown command %q; run 'sparkhost help' for the list\n", args[0])
	return 2
}
