// Command echo compares echo throughput and latency over loopback of raw
// UDP, quic-go datagrams (RFC 9221) and sparkhost protocol v4 (unreliable
// messages, packed), with the same client logic for all three: 64 messages
// in flight, each echoed message replaced by a new one, a flush after each
// burst of replies (a no-op for raw UDP and quic-go, which send at once or
// pack on their own). Server and client are separate processes with
// GOMAXPROCS=1, pinned to one core each with taskset when it is there.
//
//	cd bench && go run ./echo                # 8 B and 300 B, 3 rounds of 3 s
//	go run ./echo -sizes 300 -rounds 5 -profile /tmp/prof
//
// It prints, per size and transport: messages echoed per second, p50/p99
// round trip, the server's CPU time per message, and the ratios
// sparkhost/quic-go and sparkhost/raw. It lives in its own module so that
// quic-go never enters the product's go.mod.
package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sparkhost/sparkhost/bench/internal/echosrv"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// echoType is the message type of the sparkhost echo.
const echoType wire.MessageType = 1000

var transports = []string{"raw", "quic", "sparkhost"}

func main() {
	role := flag.String("role", "", "internal: server or client")
	transport := flag.String("transport", "", "internal: raw, quic or sparkhost")
	addr := flag.String("addr", "", "internal: the server's address")
	pin := flag.String("pin", "", "internal: the sparkhost server's pin")
	size := flag.Int("size", 8, "internal: message size")
	sizes := flag.String("sizes", "8,300", "message sizes in bytes, comma separated")
	duration := flag.Duration("duration", 3*time.Second, "measured time per case and round (after 1 s of warm-up)")
	rounds := flag.Int("rounds", 3, "rounds: the transports run in turn, each round, and the median round counts")
	inflight := flag.Int("inflight", 64, "messages in flight")
	flag.StringVar(&profileDir, "profile", "", "write CPU profiles of every server and client process to this directory")
	flag.Parse()
	if *role != "" && profileDir != "" {
		f, err := os.Create(filepath.Join(profileDir, fmt.Sprintf("%s-%s-%d.pprof", *role, *transport, *size)))
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	var err error
	switch *role {
	case "server":
		err = serve(*transport)
	case "client":
		err = client(*transport, *addr, *pin, *size, *inflight, *duration)
	default:
		err = orchestrate(*sizes, *inflight, *duration, *rounds)
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

// profileDir, when set, receives a CPU profile per process (-profile).
var profileDir string

// result is what a client process reports.
type result struct {
	Messages uint64  `json:"messages"`
	Seconds  float64 `json:"seconds"`
	P50us    float64 `json:"p50_us"`
	P99us    float64 `json:"p99_us"`
	Lost     uint64  `json:"lost"`
}

// serverReport is what a server process reports when told to stop.
type serverReport struct {
	CPUns    int64  `json:"cpu_ns"`
	Messages uint64 `json:"messages"`
}

func orchestrate(sizeList string, inflight int, dur time.Duration, rounds int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	_, tsErr := exec.LookPath("taskset")
	pinned := tsErr == nil
	fmt.Printf("echo over loopback: %d in flight, %d rounds of %v per case (transports in turn; the median round is shown), GOMAXPROCS=1 per process, taskset pinning %v\n\n",
		inflight, rounds, dur, pinned)
	fmt.Printf("%-6s %-10s %12s %10s %10s %14s %8s\n", "size", "transport", "msgs/s", "p50 µs", "p99 µs", "server ns/msg", "lost")
	for _, s := range strings.Split(sizeList, ",") {
		size, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || size < 8 || size > 1100 {
			return fmt.Errorf("size %q: choose 8..1100 bytes", s)
		}
		type round struct {
			r    result
			sr   serverReport
			rate float64
		}
		all := map[string][]round{}
		for range max(rounds, 1) {
			for _, tr := range transports {
				r, sr, err := runCase(self, pinned, tr, size, inflight, dur)
				if err != nil {
					return fmt.Errorf("%s %d B: %w", tr, size, err)
				}
				all[tr] = append(all[tr], round{r, sr, float64(r.Messages) / r.Seconds})
			}
		}
		rates := map[string]float64{}
		for _, tr := range transports {
			rs := all[tr]
			slices.SortFunc(rs, func(a, b round) int { return cmp.Compare(a.rate, b.rate) })
			m := rs[len(rs)/2]
			rates[tr] = m.rate
			perMsg := 0.0
			if m.sr.Messages > 0 {
				perMsg = float64(m.sr.CPUns) / float64(m.sr.Messages)
			}
			fmt.Printf("%-6d %-10s %12.0f %10.1f %10.1f %14.0f %8d\n", size, tr, m.rate, m.r.P50us, m.r.P99us, perMsg, m.r.Lost)
		}
		fmt.Printf("%-6d sparkhost/quic-go %.2f×, sparkhost/raw %.2f×\n\n", size, rates["sparkhost"]/rates["quic"], rates["sparkhost"]/rates["raw"])
	}
	return nil
}

// runCase starts a server process and a client process for one case.
func runCase(self string, pinned bool, tr string, size, inflight int, dur time.Duration) (result, serverReport, error) {
	command := func(cpu string, args ...string) *exec.Cmd {
		var c *exec.Cmd
		if pinned {
			c = exec.Command("taskset", append([]string{"-c", cpu, self}, args...)...)
		} else {
			c = exec.Command(self, args...)
		}
		c.Env = append(os.Environ(), "GOMAXPROCS=1")
		c.Stderr = os.Stderr
		return c
	}
	srv := command("0", "-role", "server", "-transport", tr, "-size", strconv.Itoa(size), "-profile", profileDir)
	stdin, err := srv.StdinPipe()
	if err != nil {
		return result{}, serverReport{}, err
	}
	stdout, err := srv.StdoutPipe()
	if err != nil {
		return result{}, serverReport{}, err
	}
	if err := srv.Start(); err != nil {
		return result{}, serverReport{}, err
	}
	defer srv.Process.Kill()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		return result{}, serverReport{}, errors.New("the server printed nothing")
	}
	var addr, pin string
	if _, err := fmt.Sscanf(lines.Text(), "ready %s %s", &addr, &pin); err != nil {
		return result{}, serverReport{}, fmt.Errorf("server said %q", lines.Text())
	}
	cli := command("1", "-role", "client", "-transport", tr, "-addr", addr, "-pin", pin, "-profile", profileDir,
		"-size", strconv.Itoa(size), "-inflight", strconv.Itoa(inflight), "-duration", dur.String())
	out, err := cli.Output()
	if err != nil {
		return result{}, serverReport{}, fmt.Errorf("client: %w", err)
	}
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		return result{}, serverReport{}, fmt.Errorf("client said %q", out)
	}
	stdin.Close() // the server reports and exits
	var sr serverReport
	if lines.Scan() {
		_ = json.Unmarshal(lines.Bytes(), &sr)
	}
	_ = srv.Wait()
	return r, sr, nil
}

// serve runs one echo server until its stdin closes, then prints its CPU
// time and the messages it echoed.
func serve(tr string) error {
	var echoed atomic.Uint64
	var addr, pin string
	var stop func()
	switch tr {
	case "raw":
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return err
		}
		_ = c.SetReadBuffer(4 << 20)
		_ = c.SetWriteBuffer(4 << 20)
		go func() {
			buf := make([]byte, 2048)
			for {
				n, from, err := c.ReadFromUDPAddrPort(buf)
				if err != nil {
					return
				}
				_, _ = c.WriteToUDPAddrPort(buf[:n], from)
				echoed.Add(1)
			}
		}()
		addr, pin, stop = c.LocalAddr().String(), "-", func() { c.Close() }
	case "quic":
		ln, err := quic.ListenAddr("127.0.0.1:0", serverTLS(), &quic.Config{EnableDatagrams: true, MaxIdleTimeout: time.Minute})
		if err != nil {
			return err
		}
		go func() {
			for {
				conn, err := ln.Accept(context.Background())
				if err != nil {
					return
				}
				go func() {
					for {
						p, err := conn.ReceiveDatagram(context.Background())
						if err != nil {
							return
						}
						if conn.SendDatagram(p) == nil {
							echoed.Add(1)
						}
					}
				}()
			}
		}()
		addr, pin, stop = ln.Addr().String(), "-", func() { ln.Close() }
	case "sparkhost":
		srv, err := echosrv.New(echoSchema(), netstack.ServerConfig{})
		if err != nil {
			return err
		}
		srv.Handle(echoType, func(id uint32, _ *wire.Header, p []byte) {
			// Queued; the end of the receive pass flushes the pass's answers
			// packed into as few datagrams as they fit.
			if srv.Send(id, echoType, wire.Unreliable, p) == nil {
				echoed.Add(1)
			}
		})
		srv.Start()
		addr, pin, stop = srv.Addr().String(), srv.Pin(), func() { srv.Close() }
	default:
		return fmt.Errorf("transport %q: choose raw, quic or sparkhost", tr)
	}
	fmt.Printf("ready %s %s\n", addr, pin)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the orchestrator closes it
	stop()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := ru.Utime.Nano() + ru.Stime.Nano()
	b, _ := json.Marshal(serverReport{CPUns: cpu, Messages: echoed.Load()})
	fmt.Println(string(b))
	return nil
}

func echoSchema() wire.Schema {
	return wire.Schema{ID: echoType, Name: "Echo", Direction: wire.BothDirections, Channel: wire.Unreliable,
		MinLen: 1, MaxLen: 1100, StringFieldOffset: wire.NoStringFields}
}

// echoConn is the one client logic's view of a transport.
type echoConn interface {
	Send(p []byte) error
	Recv() ([]byte, error) // blocks
	Flush()                // sends what Send queued (no-op where Send sends)
	Close()
}

func client(tr, addr, pin string, size, inflight int, dur time.Duration) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	var c echoConn
	var err error
	switch tr {
	case "raw":
		c, err = dialRaw(addr)
	case "quic":
		c, err = dialQUIC(ctx, addr)
	case "sparkhost":
		c, err = dialSparkhost(ctx, addr, pin)
	default:
		err = fmt.Errorf("transport %q", tr)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	r := runEcho(c, size, inflight, dur)
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	return nil
}

// runEcho keeps inflight messages outstanding: every echo received is
// replaced by a new message; after each burst of echoes, one Flush. A
// message whose echo has not come back 200 ms after the last echo is
// counted lost and replaced. The first second is warm-up.
func runEcho(c echoConn, size, inflight int, dur time.Duration) result {
	recv := make(chan []byte, 8192)
	go func() {
		for {
			p, err := c.Recv()
			if err != nil {
				close(recv)
				return
			}
			recv <- p
		}
	}()
	const slots = 1 << 16
	sent := make([]time.Time, slots)
	payload := make([]byte, size)
	var seq uint32
	outstanding := 0
	send := func() {
		binary.LittleEndian.PutUint32(payload, seq)
		sent[seq%slots] = time.Now()
		if c.Send(payload) == nil {
			outstanding++
		}
		seq++
	}
	var rtts []int32
	var res result
	measuring := false
	start := time.Now()
	var measureStart time.Time
	timer := time.NewTimer(200 * time.Millisecond)
	for outstanding < inflight {
		send()
	}
	c.Flush()
	for {
		now := time.Now()
		if !measuring && now.Sub(start) >= time.Second {
			measuring, measureStart = true, now
		}
		if measuring && now.Sub(measureStart) >= dur {
			break
		}
		timer.Reset(200 * time.Millisecond)
		select {
		case p, ok := <-recv:
			if !ok {
				res.Seconds = time.Since(measureStart).Seconds()
				return res
			}
			handle := func(p []byte) {
				outstanding--
				if len(p) >= 4 && measuring {
					s := binary.LittleEndian.Uint32(p)
					rtts = append(rtts, int32(time.Since(sent[s%slots])/time.Microsecond))
					res.Messages++
				}
				send()
			}
			handle(p)
			for more := true; more; {
				select {
				case p, ok := <-recv:
					if ok {
						handle(p)
					} else {
						more = false
					}
				default:
					more = false
				}
			}
			c.Flush()
		case <-timer.C:
			if measuring {
				res.Lost += uint64(outstanding)
			}
			outstanding = 0
			for outstanding < inflight {
				send()
			}
			c.Flush()
		}
	}
	res.Seconds = time.Since(measureStart).Seconds()
	slices.Sort(rtts)
	if n := len(rtts); n > 0 {
		res.P50us = float64(rtts[n/2])
		res.P99us = float64(rtts[n*99/100])
	}
	return res
}

type rawConn struct {
	c   *net.UDPConn
	buf []byte
}

func dialRaw(addr string) (*rawConn, error) {
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		return nil, err
	}
	_ = c.SetReadBuffer(4 << 20)
	_ = c.SetWriteBuffer(4 << 20)
	return &rawConn{c: c, buf: make([]byte, 2048)}, nil
}

func (r *rawConn) Send(p []byte) error { _, err := r.c.Write(p); return err }
func (r *rawConn) Recv() ([]byte, error) {
	n, err := r.c.Read(r.buf)
	return append([]byte(nil), r.buf[:n]...), err
}
func (r *rawConn) Flush() {}
func (r *rawConn) Close() { r.c.Close() }

type quicConn struct{ c *quic.Conn }

func dialQUIC(ctx context.Context, addr string) (*quicConn, error) {
	c, err := quic.DialAddr(ctx, addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"echo"}},
		&quic.Config{EnableDatagrams: true, MaxIdleTimeout: time.Minute})
	if err != nil {
		return nil, err
	}
	return &quicConn{c: c}, nil
}

func (q *quicConn) Send(p []byte) error   { return q.c.SendDatagram(p) }
func (q *quicConn) Recv() ([]byte, error) { return q.c.ReceiveDatagram(context.Background()) }
func (q *quicConn) Flush()                {}
func (q *quicConn) Close()                { q.c.CloseWithError(0, "done") }

type sparkConn struct{ c *netstack.Client }

func dialSparkhost(ctx context.Context, addr, pin string) (*sparkConn, error) {
	reg := wire.NewRegistry()
	if err := reg.Register("echo", echoSchema()); err != nil {
		return nil, err
	}
	c, err := netstack.Dial(ctx, netstack.ClientConfig{Server: netip.MustParseAddrPort(addr), Name: "bench", Pin: pin, Registry: reg})
	if err != nil {
		return nil, err
	}
	return &sparkConn{c: c}, nil
}

func (s *sparkConn) Send(p []byte) error { return s.c.Send(echoType, wire.Unreliable, p) }
func (s *sparkConn) Recv() ([]byte, error) {
	m, err := s.c.Receive(context.Background())
	return m.Payload, err
}
func (s *sparkConn) Flush() { s.c.Flush() }
func (s *sparkConn) Close() {
	if os.Getenv("ECHO_STATS") != "" {
		st := s.c.Stats()
		fmt.Fprintf(os.Stderr, "client: %d messages in %d datagrams sent, %d in %d received\n", st.MessagesSent, st.PacketsSent, st.MessagesReceived, st.PacketsReceived)
	}
	s.c.Close()
}

// serverTLS is a throwaway self-signed certificate for the quic-go server.
func serverTLS() *tls.Config {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, NextProtos: []string{"echo"}}
}
