package discovery

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"
)

// silentTarget is a loopback socket that never answers (and, being open,
// draws no ICMP error).
func silentTarget(t *testing.T) netip.AddrPort {
	return loopbackClient(t).LocalAddr().(*net.UDPAddr).AddrPort()
}

func TestQueryRefusesBadTargets(t *testing.T) {
	many := make([]netip.AddrPort, MaxTargets+1)
	for i := range many {
		many[i] = netip.MustParseAddrPort("127.0.0.1:27016")
	}
	cases := map[string][]netip.AddrPort{
		"none":        nil,
		"too many":    many,
		"IPv6":        {netip.MustParseAddrPort("[::1]:27016")},
		"4in6":        {netip.MustParseAddrPort("[::ffff:127.0.0.1]:27016")},
		"unspecified": {netip.MustParseAddrPort("0.0.0.0:27016")},
		"multicast":   {netip.MustParseAddrPort("224.0.0.1:27016")},
		"port 0":      {netip.MustParseAddrPort("127.0.0.1:0")},
		"invalid":     {{}},
	}
	for name, targets := range cases {
		t.Run(name, func(t *testing.T) {
			if res, err := Query(context.Background(), targets, time.Millisecond); !errors.Is(err, ErrTarget) || res != nil {
				t.Fatalf("Query = %v, %v; want ErrTarget", res, err)
			}
		})
	}
}

func TestQueryNoServers(t *testing.T) {
	start := time.Now()
	res, err := Query(context.Background(), []netip.AddrPort{silentTarget(t)}, 100*time.Millisecond)
	if err != nil || len(res) != 0 {
		t.Fatalf("Query = %+v, %v; want nothing", res, err)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Fatalf("Query took %v for a 100 ms wait", d)
	}
}

func TestQueryContextEndsWait(t *testing.T) {
	r := startResponder(t, ResponderConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Query(ctx, []netip.AddrPort{r.Addr(), silentTarget(t)}, 10*time.Second)
	if !errors.Is(err, context.DeadlineExceeded) || len(res) != 1 {
		t.Fatalf("Query = %+v, %v; want the one answer and DeadlineExceeded", res, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Query took %v despite a 150 ms context", d)
	}

	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	start = time.Now()
	if _, err := Query(ctx, []netip.AddrPort{silentTarget(t)}, 10*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Query: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancelled Query took %v", d)
	}
}

// The broadcast socket option is checked on the socket itself; nothing is
// sent anywhere.
func TestQuerySocketBroadcastOption(t *testing.T) {
	loop, err := openQuerySocket(context.Background(), []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:27016")})
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	if got := loop.LocalAddr().(*net.UDPAddr).AddrPort().Addr(); !got.IsLoopback() {
		t.Fatalf("loopback-only query socket bound to %s", got)
	}

	bc, err := openQuerySocket(context.Background(), []netip.AddrPort{netip.AddrPortFrom(LimitedBroadcast, 27016)})
	if errors.Is(err, ErrBroadcastUnavailable) {
		t.Skipf("no SO_BROADCAST here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	if v := soBroadcast(t, bc); v != 1 {
		t.Fatalf("broadcast socket has SO_BROADCAST %d", v)
	}
}

func soBroadcast(t *testing.T, c *net.UDPConn) int {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	raw.Control(func(fd uintptr) { v, gerr = getsockoptInt(fd, syscall.SO_BROADCAST) })
	if gerr != nil {
		t.Skipf("getsockopt: %v", gerr)
	}
	return v
}

func TestSendErrorMessage(t *testing.T) {
	e := &SendError{Failed: map[netip.AddrPort]error{
		netip.MustParseAddrPort("255.255.255.255:27016"): errors.New("network is unreachable"),
		netip.MustParseAddrPort("127.0.0.1:27016"):       errors.New("boom"),
	}}
	want := "discovery: query not sent to 127.0.0.1:27016: boom; 255.255.255.255:27016: network is unreachable"
	if e.Error() != want {
		t.Fatalf("%q\nwant %q", e.Error(), want)
	}
	if !strings.HasPrefix(e.Error(), "discovery:") {
		t.Fatal("prefix")
	}
}
