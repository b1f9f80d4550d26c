// Package echosrv starts the benchmarks' sparkhost echo servers: a netstack
// server bound to loopback, with an identity made for the run and a
// registry holding the one echo schema.
package echosrv

import (
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// New starts a server with cfg, its Bind, Identity and Registry filled in
// (127.0.0.1, a fresh key, echo alone) and its Logger discarding when unset.
func New(echo wire.Schema, cfg netstack.ServerConfig) (*netstack.Server, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	reg := wire.NewRegistry()
	if err := reg.Register("echo", echo); err != nil {
		return nil, err
	}
	cfg.Bind, cfg.Identity, cfg.Registry = "127.0.0.1", priv, reg
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return netstack.NewServer(cfg)
}
