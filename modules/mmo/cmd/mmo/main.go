// Command mmo is the mmo module as a standalone plugin binary, for
// debugging it under a debugger (`dlv exec`/`dlv attach`) or running it from
// another build: `go build -o mmo ./modules/mmo/cmd/mmo` then
// `sparkhost run --module ./mmo`. `sparkhost run --module mmo` runs the
// same code from the sparkhost binary itself, served the same way
// (plugin.ServeRooms, as every built-in module), so that what the tests run
// is what the server runs.
package main

import (
	"github.com/sparkhost/sparkhost/modules/mmo"
	"github.com/sparkhost/sparkhost/plugin"
)

func main() { plugin.ServeRooms(mmo.New) }
