// Command deathmatch is the deathmatch module as a standalone plugin
// binary, for debugging it under a debugger (`dlv exec`/`dlv attach`) or
// running it from another build: `go build -o deathmatch
// ./modules/deathmatch/cmd/deathmatch` then `sparkhost run --module
// ./deathmatch`. `sparkhost run --module deathmatch` runs the same code
// from the sparkhost binary itself.
package main

import (
	"github.com/sparkhost/sparkhost/modules/deathmatch"
	"github.com/sparkhost/sparkhost/plugin"
)

func main() {
	watchProfile()
	plugin.ServeRooms(deathmatch.New)
}
