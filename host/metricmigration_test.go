package host_test

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/netstack"
)

// metricsOfMigration drives the migration families (docs/protocol.md §4.1):
// a client that moves to a new socket (one migration), and one whose frames
// start coming from an address where nothing answers (validations that
// fail, challenges held by the 3× bound), while it still hears the server
// at its first address.
func metricsOfMigration(t *testing.T) *host.Server {
	srv, _ := startHostWith(t, host.Options{}, func(c *config.Config) { withOps(c) })
	ctx := context.Background()
	mover, err := dialFrom(ctx, srv, netip.MustParseAddr("127.0.4.1"), "mover")
	if err != nil {
		t.Fatal(err)
	}
	defer mover.Close()
	eventually(t, "the mover's connection id", mover.MigrationReady)
	next, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.4.2:0")))
	if err != nil {
		t.Fatal(err)
	}
	if err := mover.Rebind(next); err != nil {
		t.Fatal(err)
	}
	s := await(t, srv, "the migration counted", func(s scraped) bool { return s.v("sparkhost_net_migrations_total") == 1 })
	s.want("sparkhost_net_migrations_total", 1)

	home := rawSocket(t, netip.MustParseAddr("127.0.4.3"))
	away := rawSocket(t, netip.MustParseAddr("127.0.4.4"))
	split := &splitConn{UDPConn: home.UDPConn, away: away.UDPConn}
	uc, err := dialVia(ctx, srv, split, "splitter")
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	eventually(t, "the splitter's connection id", uc.MigrationReady)
	split.moved.Store(true) // from now on its frames leave from away, where nobody reads
	s = await(t, srv, "a validation abandoned", func(s scraped) bool {
		return s.v("sparkhost_net_path_validations_total", "result=failed") >= 1
	})
	s.want("sparkhost_net_connection_ids_issued_total", 2)
	s.atLeast("sparkhost_net_path_validations_total", 2, "result=started")
	s.atLeast("sparkhost_net_path_validations_total", 1, "result=failed")
	s.atLeast("sparkhost_net_path_challenges_held_total", 1)
	s.want("sparkhost_net_migrations_total", 1)
	return srv
}

// splitConn reads from its own socket and, once moved, writes through
// another: the server sees the client at a new address that never answers.
type splitConn struct {
	*net.UDPConn
	away  *net.UDPConn
	moved atomic.Bool
}

func (c *splitConn) WriteTo(b []byte, to net.Addr) (int, error) {
	if c.moved.Load() {
		return c.away.WriteTo(b, to)
	}
	return c.UDPConn.WriteTo(b, to)
}

func (c *splitConn) WriteToUDPAddrPort(b []byte, to netip.AddrPort) (int, error) {
	if c.moved.Load() {
		return c.away.WriteToUDPAddrPort(b, to)
	}
	return c.UDPConn.WriteToUDPAddrPort(b, to)
}

// dialVia connects a client over conn.
func dialVia(ctx context.Context, srv *host.Server, conn net.PacketConn, name string) (*netstack.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin(), Conn: conn})
	return c, err
}
