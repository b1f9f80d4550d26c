// Command greeter is a complete small sparkhost Go plugin, the one
// docs/go-plugins.md walks through and the tests build and run.
//
// Players send Shout (1000, a NetBuffer string); the module tells everyone
// "NAME: TEXT" as Shouted (1001) and greets each player who joins. The
// admin console gains `greeter_stats`. Build and run it:
//
//	go build -o greeter ./examples/greeter
//	sparkhost run --module ./greeter
package main

import (
	"fmt"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
)

// The module's message types (UserDefined: id ≥ 1000).
const (
	TypeShout   wire.MessageType = 1000 // client → server: str text
	TypeShouted wire.MessageType = 1001 // server → client: str line
)

type greeter struct {
	plugin.Base
	h      module.Host
	shouts int
	buf    []byte
}

func (g *greeter) Manifest() module.Manifest {
	return module.Manifest{
		Name: "greeter", Version: "1.0.0",
		Messages: []wire.Schema{
			// 2-byte length + 1..200 bytes of UTF-8: the server checks it
			// before the module sees it.
			{ID: TypeShout, Name: "Shout", Direction: wire.ClientToServer, Channel: wire.Reliable,
				MinLen: 3, MaxLen: 202, StringFieldOffset: 0, RequiresAdmitted: true},
			{ID: TypeShouted, Name: "Shouted", Direction: wire.ServerToClient, Channel: wire.Reliable,
				MinLen: 2, MaxLen: 2 + 300, StringFieldOffset: 0, RequiresAdmitted: true},
		},
		Commands: []module.CommandSpec{{Name: "greeter_stats", Usage: "", Help: "shouts heard and players present"}},
	}
}

func (g *greeter) Load(h module.Host) error {
	g.h = h
	h.Every(time.Minute, func() { h.Log().Info("greeter stats", "shouts", g.shouts, "players", len(h.Clients())) })
	h.Log().Info("greeter loaded", "server", h.Server().Name)
	return nil
}

// say sends one Shouted line to a client, or to everyone when to is 0.
func (g *greeter) say(to uint32, line string) {
	w := wire.NewWriter(g.buf)
	w.Str(line)
	g.buf = w.Bytes()
	var err error
	if to == 0 {
		err = g.h.Broadcast(TypeShouted, g.buf)
	} else {
		err = g.h.Send(to, TypeShouted, g.buf)
	}
	if err != nil {
		g.h.Log().Warn("say", "err", err)
	}
}

func (g *greeter) OnAdmitted(c module.ClientInfo) {
	g.say(c.ID, fmt.Sprintf("welcome %s, %d here", c.Name, len(g.h.Clients())))
}

func (g *greeter) OnMessage(c module.ClientInfo, t wire.MessageType, payload []byte) {
	if t != TypeShout {
		return
	}
	r := wire.NewReader(payload)
	text := r.Str()
	if r.HasError() {
		return // cannot happen: the schema was checked; be strict anyway
	}
	g.shouts++
	g.say(0, c.Name+": "+text)
}

func (g *greeter) Command(name string, _ []string) (string, error) {
	if name != "greeter_stats" {
		return "", fmt.Errorf("no such command %q", name)
	}
	return fmt.Sprintf("shouts %d, players %d", g.shouts, len(g.h.Clients())), nil
}

func main() { plugin.Serve(&greeter{}) }
