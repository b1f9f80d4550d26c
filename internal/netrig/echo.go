package netrig

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The rig's echo datagram. A probe goes out, the echo server sends it back
// with what it saw filled in; a count-only datagram is counted, not
// answered; a stats query is answered with the flow's count.
//
//	0      kind (1 probe, 2 stats query, 3 count only; replies set 0x80)
//	4..8   flow id, chosen by the client
//	8..16  sequence number
//	16..24 the client's send time, CLOCK_MONOTONIC ns
//	24..28 the IPv4 source address the server saw
//	28..30 the source port the server saw
//	32..40 datagrams of this flow the server received so far
//	40..48 when the server received it, CLOCK_MONOTONIC ns (the rig's
//	       namespaces share one clock: one-way delays are exact)
//	48..   padding up to the probe's size
const (
	kindProbe = 1
	kindStats = 2
	kindCount = 3
	kindReply = 0x80

	echoHeader = 48
	maxFlows   = 4096
)

// echoPacket is a datagram's header.
type echoPacket struct {
	kind     byte
	flow     uint32
	seq      uint64
	sent     int64
	seen     netip.AddrPort
	received uint64
	arrived  int64
}

var errShort = errors.New("netrig: echo datagram shorter than its header")

func parseEcho(b []byte) (echoPacket, error) {
	if len(b) < echoHeader {
		return echoPacket{}, errShort
	}
	ip := netip.AddrFrom4([4]byte(b[24:28]))
	return echoPacket{
		kind:     b[0],
		flow:     binary.BigEndian.Uint32(b[4:8]),
		seq:      binary.BigEndian.Uint64(b[8:16]),
		sent:     int64(binary.BigEndian.Uint64(b[16:24])),
		seen:     netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[28:30])),
		received: binary.BigEndian.Uint64(b[32:40]),
		arrived:  int64(binary.BigEndian.Uint64(b[40:48])),
	}, nil
}

// put writes the header into b (len(b) ≥ echoHeader).
func (p echoPacket) put(b []byte) {
	clear(b[:echoHeader])
	b[0] = p.kind
	binary.BigEndian.PutUint32(b[4:8], p.flow)
	binary.BigEndian.PutUint64(b[8:16], p.seq)
	binary.BigEndian.PutUint64(b[16:24], uint64(p.sent))
	if p.seen.Addr().Is4() {
		a := p.seen.Addr().As4()
		copy(b[24:28], a[:])
	}
	binary.BigEndian.PutUint16(b[28:30], p.seen.Port())
	binary.BigEndian.PutUint64(b[32:40], p.received)
	binary.BigEndian.PutUint64(b[40:48], uint64(p.arrived))
}

// monotonic is CLOCK_MONOTONIC in ns: one clock for every process on the
// machine, whatever namespace it is in.
func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// ServeEcho answers the rig's echo datagrams on conn until conn is closed:
// a probe comes back the same size with the source address the server saw
// and the flow's count; anything malformed is dropped.
func ServeEcho(conn *net.UDPConn) error {
	counts := make(map[uint32]uint64)
	buf := make([]byte, 65536)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		arrived := monotonic()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		p, err := parseEcho(buf[:n])
		if err != nil || p.kind&kindReply != 0 {
			continue
		}
		if _, ok := counts[p.flow]; ok || len(counts) < maxFlows {
			if p.kind != kindStats {
				counts[p.flow]++
			}
		}
		if p.kind == kindCount {
			continue
		}
		p.kind |= kindReply
		p.seen = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		p.received = counts[p.flow]
		p.arrived = arrived
		p.put(buf[:n])
		conn.WriteToUDPAddrPort(buf[:n], from)
	}
}

// EchoEnv names the variable that makes a binary an echo server: a program
// that calls ServeEchoIfAsked first thing (a test's TestMain, netrig's
// command) becomes one when it is set to "address:port". StartEcho sets it.
const EchoEnv = "NETRIG_ECHO_LISTEN"

// ServeEchoIfAsked turns the process into an echo server and never returns
// when EchoEnv is set: it listens there, prints "ready" on stdout, and
// serves until killed. Otherwise it returns at once.
func ServeEchoIfAsked() {
	addr := os.Getenv(EchoEnv)
	if addr == "" {
		return
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "netrig echo: %s=%q: %v\n", EchoEnv, addr, err)
		os.Exit(2)
	}
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(ap))
	if err != nil {
		fmt.Fprintf(os.Stderr, "netrig echo: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	if err := ServeEcho(conn); err != nil {
		fmt.Fprintf(os.Stderr, "netrig echo: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// StartEcho runs this program again inside the node's namespace as an echo
// server on the node's address and port, and returns once it listens. The
// program must call ServeEchoIfAsked first thing (a test binary: in
// TestMain); a test binary that does not is told to run no test and exits,
// which StartEcho reports.
func (n *Node) StartEcho(port int) (netip.AddrPort, error) {
	exe, err := os.Executable()
	if err != nil {
		return netip.AddrPort{}, err
	}
	ap := netip.AddrPortFrom(n.Addr, uint16(port))
	if port == 0 {
		return ap, errors.New("netrig: StartEcho needs a port")
	}
	cmd := n.Command(n.rig.ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), EchoEnv+"="+ap.String())
	cmd.Stderr = &lineLog{logf: n.rig.logf, label: n.role() + ": echo"}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return ap, err
	}
	if err := cmd.Start(); err != nil {
		return ap, fmt.Errorf("netrig: start echo in %s: %w", n.Name, err)
	}
	go cmd.Wait()
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line == "ready\n"
	}()
	select {
	case ok := <-ready:
		if ok {
			return ap, nil
		}
	case <-time.After(cmdTimeout):
	}
	return ap, fmt.Errorf("netrig: %s did not become an echo server on %s in %s "+
		"(does it call netrig.ServeEchoIfAsked first thing, in TestMain for a test?)",
		strconv.Quote(exe), ap, n.Name)
}
