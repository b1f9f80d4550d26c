package mmo_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"testing"

	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/internal/netrig"
	"github.com/sparkhost/sparkhost/modules/mmo"
	"github.com/sparkhost/sparkhost/modules/mmo/internal/pgtest"
)

// rigClients is how many client namespaces the players are spread over
// (each behind the rig's NAT on a link of its own).
const rigClients = 10

// TestRigDrainRollingRestart is TestAreasDrainRollingRestart on real
// kernel paths (docs/netrig.md): both area servers in the rig's server
// namespace, in internet mode on 198.18.0.2, the 50 clients in 10 client
// namespaces behind the rig's NAT on `home` links (40 ms, 0.5 % loss, 20
// Mbit/s). The servers reach PostgreSQL through its unix socket (the file
// system is shared; the network is not).
func TestRigDrainRollingRestart(t *testing.T) {
	rig, w, l, url := rigAreaWorld(t)
	open := func(i int) (net.PacketConn, error) { return rig.Client(i % rigClients).ListenUDP(0) }
	rollingRestart(t, w, l, openShared(t, url), open)
}

// TestRigRestartWithoutDrain is the baseline on the rig: west stopped by
// SIGTERM drops every client.
func TestRigRestartWithoutDrain(t *testing.T) {
	rig, w, l, _ := rigAreaWorld(t)
	open := func(i int) (net.PacketConn, error) { return rig.Client(i % rigClients).ListenUDP(0) }
	restartWithoutDrain(t, w, l, open)
}

// rigAreaWorld builds the rig, a database and the two areas' data
// directories, and the launcher that runs area servers in the rig's server
// namespace; it returns the database's TCP URL for the test's own checks.
func rigAreaWorld(t *testing.T) (*netrig.Rig, *areaWorld, *launcher, string) {
	t.Helper()
	rig := netrig.New(t, netrig.Config{Clients: rigClients, Profile: netrig.Home, NAT: true})
	c := pgtest.Need(t)
	name, err := c.CreateDB(context.Background())
	must(t, err)
	t.Setenv(mmo.DatabasePasswordEnv, c.Password)
	socketURL := fmt.Sprintf("postgres://%s@/%s?host=%s&port=%d&sslmode=disable", c.User, name, url.QueryEscape(c.Dir), c.Port)
	w := newAreaWorldOn(t, socketURL, rig.Server.Addr, "speed = 100\nmax_registrations = 0",
		testArea{name: "west", bounds: [4]float64{0, 0, 500, 1000}},
		testArea{name: "east", bounds: [4]float64{500, 0, 1000, 1000}})
	l := &launcher{
		bin:   testplugin.Build(t, "./cmd/sparkhost"),
		flags: []string{"--internet"},
		// Every client reaches the servers from the NAT's one address.
		network: "admitted_per_address = 0\nadmitted_per_prefix = 0\n",
		command: func(name string, args ...string) *exec.Cmd {
			return rig.Server.Command(context.Background(), name, args...)
		},
	}
	return rig, w, l, c.URLWithoutPassword(name)
}
