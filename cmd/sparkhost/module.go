package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/modules/mmo"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
	"github.com/sparkhost/sparkhost/runtimes/pluginhost"
)

// builtinModules are the Go plugin modules compiled into this binary. The
// server runs each in its own process, started from this same executable
// with the hidden sub-command `__module NAME`, exactly like a third-party
// plugin: a crash in one never takes the server down.
var builtinModules = map[string]func() plugin.Module{
	"mmo":           mmo.New,
	deathmatch.Name: deathmatch.New,
}

// builtinLookup tells the host how to start a built-in module.
func builtinLookup(name string) (string, []string, bool) {
	if _, ok := builtinModules[name]; !ok {
		return "", nil, false
	}
	exe, err := os.Executable()
	if err != nil {
		return "", nil, false
	}
	return exe, []string{serveModuleCommand, name}, true
}

// serveModuleCommand is the hidden sub-command a built-in module's process
// runs; it is not meant to be typed.
const serveModuleCommand = "__module"

func serveModule(args []string) int {
	if len(args) != 1 || builtinModules[args[0]] == nil {
		fmt.Fprintf(os.Stderr, "sparkhost %s: internal sub-command; the server starts built-in modules with it (known: %s)\n",
			serveModuleCommand, strings.Join(builtinNames(), ", "))
		return 2
	}
	plugin.ServeRooms(builtinModules[args[0]])
	return 0 // not reached
}

func builtinNames() []string {
	names := make([]string, 0, len(builtinModules))
	for n := range builtinModules {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

const moduleUsage = `usage: sparkhost module describe NAME|PATH

Prints what a Go plugin module declares (name, version, plugin protocol,
message types with their schemas, console commands) without serving it.
NAME is a module built into this binary (%s); PATH is a plugin executable.
`

func moduleCommand(args []string) int {
	return moduleMain(args, os.Stdout, os.Stderr)
}

func moduleMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprintf(stdout, moduleUsage, strings.Join(builtinNames(), ", "))
		return 0
	}
	if len(args) != 2 || args[0] != "describe" {
		fmt.Fprintf(stderr, moduleUsage, strings.Join(builtinNames(), ", "))
		return 2
	}
	path, pargs := args[1], []string(nil)
	if p, a, ok := builtinLookup(args[1]); ok && !strings.ContainsAny(args[1], `/\`) {
		path, pargs = p, a
	} else if !strings.ContainsAny(args[1], `/\`) {
		fmt.Fprintf(stderr, "sparkhost module describe: %q is not a built-in module (%s); give a path such as ./%s\n",
			args[1], strings.Join(builtinNames(), ", "), args[1])
		return 1
	}
	d, err := pluginhost.Describe(path, pargs, 30*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, "sparkhost module describe:", err)
		return 1
	}
	writeDescription(stdout, d)
	return 0
}

func writeDescription(w io.Writer, d pluginhost.Description) {
	fmt.Fprintf(w, "module %s %s (plugin protocol %d)\n", d.Name, d.Version, d.Protocol)
	if len(d.Messages) == 0 {
		fmt.Fprintln(w, "message types: none")
	} else {
		fmt.Fprintln(w, "message types:")
	}
	for _, s := range d.Messages {
		str := "none"
		if s.StringFieldOffset != wire.NoStringFields {
			str = fmt.Sprintf("str@%d", s.StringFieldOffset)
		}
		fmt.Fprintf(w, "  %d %s %s %s len %d..%d string %s admitted-only %t\n",
			s.ID, s.Name, direction(s.Direction), s.Channel, s.MinLen, s.MaxLen, str, s.RequiresAdmitted)
	}
	if len(d.Commands) == 0 {
		fmt.Fprintln(w, "console commands: none")
	} else {
		fmt.Fprintln(w, "console commands:")
	}
	for _, c := range d.Commands {
		fmt.Fprintf(w, "  %s %s — %s\n", c.Name, c.Usage, c.Help)
	}
	if len(d.EntityTypes) > 0 {
		fmt.Fprintln(w, "entity types:")
	}
	for _, t := range d.EntityTypes {
		fmt.Fprintf(w, "  %d %s:", t.ID, t.Name)
		for _, f := range t.Fields {
			fmt.Fprintf(w, " %s %s %s;", f.Name, f.Kind, f.Visibility)
		}
		fmt.Fprintln(w)
	}
	if d.Inputs {
		fmt.Fprintln(w, "inputs: subscribed to ClientInput")
	}
}

func direction(d wire.Direction) string {
	switch d {
	case wire.ClientToServer:
		return "c2s"
	case wire.ServerToClient:
		return "s2c"
	case wire.BothDirections:
		return "both"
	}
	return fmt.Sprintf("dir(%d)", d)
}
