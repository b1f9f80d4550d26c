package plugin

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/sparkhost/sparkhost/internal/pluginwire"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

// Serve runs m as a sparkhost plugin and never returns: it is the whole of
// a plugin's main. Run by a server, it answers the plugin handshake and
// serves until the server is done with it (or dies: the plugin exits with
// its parent). Run with SPARKHOST_PLUGIN_DESCRIBE=1 (what `sparkhost module
// describe` does), it prints the manifest as JSON and exits. Run by hand, it
// says what it is and exits with status 2.
func Serve(m Module) {
	os.Exit(serve(m.Manifest(), func(log *slog.Logger) (pluginv1.ModuleServer, error) { return newRuntime(m, log) }))
}

// ServeRooms runs a plugin that serves every room of its mode from one
// process (docs/go-plugins.md "Rooms"): newRoom makes the module of one
// room, called once more for every room the server opens (and once to read
// the manifest). Each module is written as for one match — its Host is its
// room's: Clients, Broadcast, the entity calls and Server are the room's —
// and the server still makes one call per tick for all the rooms. Serve,
// by contrast, gets a process per room.
func ServeRooms(newRoom func() Module) {
	os.Exit(serve(newRoom().Manifest(), func(log *slog.Logger) (pluginv1.ModuleServer, error) { return newRoomsServer(newRoom, log) }))
}

func serve(man module.Manifest, build func(*slog.Logger) (pluginv1.ModuleServer, error)) int {
	log := newLogger(realStderr)
	if os.Getenv(pluginwire.CookieKey) != pluginwire.CookieValue {
		fmt.Fprintf(realStderr, "%s is a sparkhost game module (a Go plugin); the server starts it:\n"+
			"  sparkhost run --module %s\n"+
			"  sparkhost module describe %s   (prints what it declares)\n", os.Args[0], os.Args[0], os.Args[0])
		return 2
	}
	if os.Getenv(pluginwire.DescribeEnv) == "1" {
		return describe(man)
	}
	rt, err := build(log)
	if err != nil {
		fmt.Fprintf(realStderr, "sparkhost plugin: %v\n", err)
		return 1
	}
	watchParent(os.Getppid(), time.Second/4)
	startProfile(man.Name)
	defer stopProfile()
	os.Stdout = realStdout // the handshake line; go-plugin then takes stdout over
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  pluginwire.Handshake(),
		VersionedPlugins: pluginwire.PluginSet(rt),
		GRPCServer:       goplugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: "go-plugin", Level: hclog.Warn, Output: realStderr, JSONFormat: true,
		}),
	})
	return 0
}

func describe(man module.Manifest) int {
	d := pluginwire.Description{Protocol: pluginwire.ProtocolVersion(), Name: man.Name, Version: man.Version, Messages: man.Messages}
	for _, c := range man.Commands {
		d.Commands = append(d.Commands, pluginwire.Command{Name: c.Name, Usage: c.Usage, Help: c.Help})
	}
	for _, t := range man.EntityTypes {
		d.EntityTypes = append(d.EntityTypes, pluginwire.EntityType{ID: t.ID, Name: t.Name, Fields: t.Fields})
	}
	d.Inputs = man.Inputs
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		fmt.Fprintf(realStderr, "sparkhost plugin: describe: %v\n", err)
		return 1
	}
	b = append(b, '\n')
	if _, err := realStdout.Write(b); err != nil {
		return 1
	}
	return 0
}

// watchParent exits the plugin when its parent process goes away: the
// watchdog beside Pdeathsig (which the server sets on Linux, and which
// fires when the parent's thread exits rather than the parent). A plugin
// reparented to init or a subreaper sees another parent id.
func watchParent(ppid int, every time.Duration) {
	if ppid <= 1 {
		return // started by init: nothing to watch
	}
	go func() {
		for {
			time.Sleep(every)
			if os.Getppid() != ppid {
				fmt.Fprintf(realStderr, "sparkhost plugin: the server (pid %d) is gone; exiting\n", ppid)
				os.Exit(3)
			}
		}
	}()
}
