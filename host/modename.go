package host

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/host/replicate"
	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// A mode given by path is offered to players under the name its module
// declares (spark.module{name=}, Manifest.Name), not under the path:
// `--mode ./scripts/tag.lua` offers "tag". A mode given by name keeps the
// name the operator gave (players type it in room_create).

// modeName is the name players see for the mode arg resolved to spec: arg
// itself when it is a name, else the name the module declares, learnt by
// loading it once in a scratch manager that serves nothing (as `sparkhost
// check` does).
func (s *Server) modeName(arg string, spec supervisor.Spec) (string, error) {
	if !strings.ContainsAny(arg, `/\`) && !strings.HasSuffix(arg, ".lua") {
		return arg, nil
	}
	name, err := s.declaredName(spec)
	if err != nil {
		return "", err
	}
	if !wire.ValidName([]byte(name), gamemsg.MaxRoomModeLen) {
		return "", fmt.Errorf("module %s declares the name %q, which cannot name a mode (1..%d bytes, no control characters)", arg, name, gamemsg.MaxRoomModeLen)
	}
	return name, nil
}

// declaredName loads spec in a room of a scratch manager, reads its name
// and unloads it.
func (s *Server) declaredName(spec supervisor.Spec) (string, error) {
	world, err := replicate.New(replicate.Config{
		TickRate: s.cfg.Server.TickRate, Rate: s.cfg.Match.ReplicationRate, LagWindow: s.cfg.LagWindow(),
		Send: func(uint32, wire.MessageType, wire.Channel, []byte) error { return errNotServing },
		RTT:  func(uint32) (time.Duration, bool) { return 0, false },
	})
	if err != nil {
		return "", err
	}
	mods := supervisor.NewManager(supervisor.Config{
		Transport: checkTransport{reg: wire.NewRegistry()}, Commands: admin.NewRegistry(),
		Log: slog.New(slog.DiscardHandler), DataDir: s.cfg.Server.DataDir, InboxCapacity: s.cfg.Modules.InboxCapacity,
		Server: func() module.ServerInfo {
			return module.ServerInfo{Name: s.cfg.Server.Name, TickRate: s.cfg.Server.TickRate}
		},
		AddScore: func(uint32, int32, int32, int32) {},
	})
	defer mods.UnloadAll()
	if err := mods.OpenRoom(supervisor.RoomSpec{ID: 1, World: world}); err != nil {
		return "", err
	}
	return mods.StartInRoom(1, spec)
}
