package host_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/transport/web"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// fromLoopback is a dialer whose connections come from ip (127.0.0.0/8).
func fromLoopback(ip string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
}

// metricsOfWeb: a web session left silent is closed idle; a live one
// (a client's heartbeats) stays; past one session an upgrade is refused
// (session_cap), a page of another origin is refused (origin), and a second
// TCP connection from one address is closed (connection_cap).
func metricsOfWeb(t *testing.T) *host.Server {
	srv, _ := startHostWith(t, host.Options{}, func(c *config.Config) {
		withOps(c)
		withWeb(c)
		c.Web.MaxSessions, c.Web.ConnectionsPerAddress, c.Web.IdleTimeout = 1, 1, 1
	})
	url := fmt.Sprintf("ws://127.0.0.1:%d%s", srv.WebPort(), web.PathWebSocket)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	idle, err := web.DialWebSocket(ctx, url, web.ClientOptions{Dialer: fromLoopback("127.0.4.1")})
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	await(t, srv, "the silent session closed", func(s scraped) bool {
		return s.v("sparkhost_web_idle_closed_total") == 1 && s.v("sparkhost_web_sessions") == 0
	})

	live, err := web.DialWebSocket(ctx, url, web.ClientOptions{Dialer: fromLoopback("127.0.4.2")})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	cli, err := netstack.Dial(ctx, netstack.ClientConfig{Server: live.Peer(), Name: "live", Pin: srv.Pin(), Transport: live,
		Registry: gamemsg.NewRegistry(), Welcome: gamemsg.TypeGameStateSync})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	if c, err := web.DialWebSocket(ctx, url, web.ClientOptions{Dialer: fromLoopback("127.0.4.3")}); err == nil {
		c.Close()
		t.Fatal("a second web session past web.max_sessions = 1")
	}
	h := http.Header{"Origin": {"https://evil.example"}}
	if c, err := web.DialWebSocket(ctx, url, web.ClientOptions{Dialer: fromLoopback("127.0.4.4"), Origin: h.Get("Origin")}); err == nil {
		c.Close()
		t.Fatal("a page of another origin was served")
	}
	held, err := fromLoopback("127.0.4.5").Dial("tcp", fmt.Sprintf("127.0.0.1:%d", srv.WebPort()))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	eventually(t, "a second connection from 127.0.4.5 closed", func() bool {
		c, err := fromLoopback("127.0.4.5").Dial("tcp", fmt.Sprintf("127.0.0.1:%d", srv.WebPort()))
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		return errors.Is(err, io.EOF) || isConnReset(err)
	})

	s := await(t, srv, "the refusals counted", func(s scraped) bool {
		return s.v("sparkhost_web_refused_total", "reason=connection_cap") >= 1
	})
	s.want("sparkhost_web_sessions", 1)
	s.want("sparkhost_web_sessions_opened_total", 2)
	s.want("sparkhost_web_refused_total", 1, "reason=session_cap")
	s.want("sparkhost_web_refused_total", 1, "reason=origin")
	s.atLeast("sparkhost_web_refused_total", 1, "reason=connection_cap")
	s.want("sparkhost_web_idle_closed_total", 1)
	return srv
}

func isConnReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}
