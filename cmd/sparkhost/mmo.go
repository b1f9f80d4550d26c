package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/sparkhost/sparkhost/modules/mmo/gateway"
	"github.com/sparkhost/sparkhost/netstack/trust"
)

const mmoUsage = `usage: sparkhost mmo world-key FILE

world-key FILE  create the world key of an mmo world split into areas
                (docs/mmo.md §13): an Ed25519 key, mode 0600, that signs
                and checks gateway tickets. Copy FILE to every area server
                of the world (its [world] key_file); never commit it. An
                existing FILE is never replaced. Prints the public key.
`

// mmoCommand runs `sparkhost mmo …`.
func mmoCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
		fmt.Fprint(stdout, mmoUsage)
		return 0
	}
	if len(args) != 2 || args[0] != "world-key" {
		fmt.Fprint(stderr, mmoUsage)
		return 2
	}
	priv, err := gateway.CreateWorldKey(args[1])
	if errors.Is(err, fs.ErrExist) {
		fmt.Fprintf(stderr, "sparkhost mmo world-key: %s exists; it is left as it is (move it away first to make a new world key)\n", args[1])
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "sparkhost mmo world-key: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "created the world key %s (mode 0600); its public key is %s\ncopy it to every area server of the world as its [world] key_file\n",
		args[1], trust.Pin(priv.Public().(ed25519.PublicKey)))
	return 0
}
