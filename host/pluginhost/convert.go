package pluginhost

import (
	"fmt"

	"github.com/sparkhost/sparkhost/host/module"
	"github.com/sparkhost/sparkhost/internal/pluginwire"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

func serverToPB(s module.ServerInfo) *pluginv1.ServerInfo {
	return &pluginv1.ServerInfo{
		Name: s.Name, Map: s.Map, Mode: uint32(s.Mode), MatchState: uint32(s.MatchState),
		TickRate: int32(s.TickRate), Tick: s.Tick, Players: int32(s.Players), MaxPlayers: int32(s.MaxPlayers),
		DataDir: s.DataDir, ModulesDir: s.ModulesDir,
	}
}

func clientToPB(c module.ClientInfo) *pluginv1.ClientInfo {
	pc := &pluginv1.ClientInfo{Id: c.ID, Name: c.Name, PingNs: int64(c.Ping), ChannelBinding: c.ChannelBinding[:]}
	if c.Addr.IsValid() {
		pc.Addr = c.Addr.String()
	}
	return pc
}

// Limits on what a plugin may declare, so a hostile manifest cannot make
// the server allocate without bound.
const (
	maxManifestMessages = 4096
	maxManifestCommands = 256
)

func manifestFromPB(p *pluginv1.Manifest) (module.Manifest, error) {
	if p == nil {
		return module.Manifest{}, fmt.Errorf("the plugin sent no manifest")
	}
	if len(p.GetMessages()) > maxManifestMessages || len(p.GetCommands()) > maxManifestCommands {
		return module.Manifest{}, fmt.Errorf("manifest declares %d message types and %d commands; the limits are %d and %d",
			len(p.GetMessages()), len(p.GetCommands()), maxManifestMessages, maxManifestCommands)
	}
	man := module.Manifest{Name: p.GetName(), Version: p.GetVersion()}
	for _, ps := range p.GetMessages() {
		s, err := pluginwire.SchemaFromPB(ps)
		if err != nil {
			return module.Manifest{}, err
		}
		man.Messages = append(man.Messages, s)
	}
	for _, c := range p.GetCommands() {
		man.Commands = append(man.Commands, module.CommandSpec{Name: c.GetName(), Usage: c.GetUsage(), Help: c.GetHelp()})
	}
	return man, nil
}
