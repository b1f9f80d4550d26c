package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Dial connects to a sparkhost server as a game client: the registry knows
// the game messages of sim/gamemsg (a nil cfg.Registry gets them; a given
// one must define them, e.g. made with gamemsg.NewRegistry), and admission
// is the server's GameStateSync, which Dial returns parsed. The message is
// also delivered by Receive, like every other.
func Dial(ctx context.Context, cfg netstack.ClientConfig) (*netstack.Client, gamemsg.GameStateSync, error) {
	if cfg.Registry == nil {
		cfg.Registry = gamemsg.NewRegistry()
	}
	if _, _, ok := cfg.Registry.Lookup(gamemsg.TypeGameStateSync); !ok {
		return nil, gamemsg.GameStateSync{}, errors.New("client: the registry lacks the game messages; build it with gamemsg.NewRegistry")
	}
	cfg.Welcome = gamemsg.TypeGameStateSync
	c, err := netstack.Dial(ctx, cfg)
	if err != nil {
		return nil, gamemsg.GameStateSync{}, err
	}
	gs, err := gamemsg.ParseGameStateSync(c.Welcome().Payload)
	if err != nil { // unreachable: the registry validated it
		c.Close()
		return nil, gamemsg.GameStateSync{}, fmt.Errorf("client: the server's GameStateSync: %w", err)
	}
	return c, gs, nil
}
