package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// serverCPU is one answer of the server process.
type serverCPU struct {
	ns                   int64
	echoed, inDg, outDgs uint64
	inB, outB            uint64
}

// child is a started process of this program.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func start(cpu string, procs, nice int, args ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	argv := append([]string{self}, args...)
	if _, err := exec.LookPath("taskset"); err == nil {
		argv = append([]string{"taskset", "-c", cpu}, argv...)
	}
	if nice != 0 {
		argv = append([]string{"nice", "-n", strconv.Itoa(nice)}, argv...) // every thread of it inherits the value
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", procs))
	c.Stderr = os.Stderr
	in, _ := c.StdinPipe()
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		return nil, err
	}
	return &child{cmd: c, in: in, out: bufio.NewScanner(out)}, nil
}

// line returns the child's next line of output other than "client:" chatter.
func (c *child) line() (string, bool) {
	if !c.out.Scan() {
		return "", false
	}
	return c.out.Text(), true
}

func orchestrate(o clientOpts, warmup, dur time.Duration) error {
	prof := []string{}
	if profileDir != "" {
		prof = []string{"-profile", profileDir}
	}
	srv, err := start("0", 1, serverNice, append([]string{"-role", "server", "-clients", strconv.Itoa(o.clients), "-channel", channelName(o.channel)}, prof...)...)
	if err != nil {
		return err
	}
	defer srv.cmd.Wait()
	defer srv.in.Close()
	if serverCgroup != "" {
		// taskset execs the server in place: its pid is the server's.
		pid := []byte(strconv.Itoa(srv.cmd.Process.Pid))
		if err := os.WriteFile(filepath.Join(serverCgroup, "cgroup.procs"), pid, 0); err != nil {
			return fmt.Errorf("server cgroup: %w", err)
		}
	}
	first, _ := srv.line()
	var addr, pin string
	if _, err := fmt.Sscanf(first, "ready %s %s", &addr, &pin); err != nil {
		return fmt.Errorf("server: %q", first)
	}
	cpuNow := func() serverCPU {
		fmt.Fprintln(srv.in, "cpu")
		var c serverCPU
		if l, ok := srv.line(); ok {
			fmt.Sscanf(l, "cpu %d %d %d %d %d %d", &c.ns, &c.echoed, &c.inDg, &c.outDgs, &c.inB, &c.outB)
		}
		return c
	}
	k := max(1, min(o.processes, o.clients))
	var kids []*child
	for i := range k {
		n := o.clients/k + btoi(i < o.clients%k)
		from := i*(o.clients/k) + min(i, o.clients%k)
		c, err := start(clientCPUs, o.procs, 0, append([]string{"-role", "client", "-addr", addr, "-pin", pin,
			"-first", strconv.Itoa(from), "-clients", strconv.Itoa(n), "-inflight", strconv.Itoa(o.inflight),
			"-size", strconv.Itoa(o.size), "-client-service", o.serviceInterval.String(), "-channel", channelName(o.channel),
			"-clients-socket", o.socket, "-loss-after", o.lossAfter.String(), "-no-migration=" + strconv.FormatBool(o.noMigration), "-client-engine", o.engine}, prof...)...)
		if err != nil {
			return err
		}
		kids = append(kids, c)
	}
	held := ""
	if serverCgroup != "" {
		held = ", held by cgroup " + serverCgroup
	}
	fmt.Printf("%d clients × %d %s messages of %d B in flight, sealed; server one process (GOMAXPROCS=1, CPU 0%s), clients %d processes (GOMAXPROCS=%d each, CPU %s, %s sockets, %s engine)\n",
		o.clients, o.inflight, channelName(o.channel), o.size, held, k, o.procs, clientCPUs, o.socket, o.engine)
	for _, c := range kids {
		if l, ok := c.line(); !ok || l != "dialed" {
			return fmt.Errorf("a client process: %q", l)
		}
	}
	tell := func(s string) {
		for _, c := range kids {
			fmt.Fprintln(c.in, s)
		}
	}
	tell("go")
	time.Sleep(warmup)
	tell("measure")
	t0, s0 := time.Now(), cpuNow()
	time.Sleep(dur)
	tell("done")
	t1, s1 := time.Now(), cpuNow()
	total := result{RTT: newHist()}
	for _, c := range kids {
		l, ok := c.line()
		var r result
		if !ok || !strings.HasPrefix(l, "{") || json.Unmarshal([]byte(l), &r) != nil {
			return fmt.Errorf("a client process reported %q", l)
		}
		if err := c.cmd.Wait(); err != nil {
			return fmt.Errorf("client process: %w", err)
		}
		total.Messages += r.Messages
		total.Seconds = max(total.Seconds, r.Seconds)
		total.Dial = max(total.Dial, r.Dial)
		total.Retransmissions += r.Retransmissions
		total.InboxDrops += r.InboxDrops
		total.Dropped += r.Dropped
		total.Datagrams += r.Datagrams
		total.Sent += r.Sent
		total.RTT.merge(r.RTT)
		total.Lost += r.Lost
		total.Late += r.Late
		total.SockSent += r.SockSent
		total.SockSendCalls += r.SockSendCalls
		total.SockRecv += r.SockRecv
		total.SockRecvCalls += r.SockRecvCalls
		total.SockDropped += r.SockDropped
	}
	report(o, total, s0, s1, t1.Sub(t0))
	return nil
}

func report(o clientOpts, r result, s0, s1 serverCPU, window time.Duration) {
	if r.Messages == 0 {
		fmt.Println("no messages echoed")
		return
	}
	cpu := float64(s1.ns - s0.ns)
	echoed := float64(s1.echoed - s0.echoed)
	sec := window.Seconds()
	fmt.Printf("connected %d clients in %.2f s; clients' retransmissions %d, inbox drops %d, datagrams dropped %d; clients sent %d messages in %d datagrams (all run)\n",
		o.clients, r.Dial, r.Retransmissions, r.InboxDrops, r.Dropped, r.Sent, r.Datagrams)
	fmt.Printf("msgs/s %.0f   p50 RTT %.0f µs   p99 RTT %.0f µs   server CPU %.0f ns/msg (%.0f%% of its core)\n",
		float64(r.Messages)/r.Seconds, r.RTT.quantile(0.5), r.RTT.quantile(0.99), cpu/echoed, 100*cpu/float64(window))
	if o.channel == wire.Unreliable {
		fmt.Printf("unreliable: %d messages lost in the window (no echo within %v; %.3f%% of those sent), %d of them echoed later\n",
			r.Lost, o.lossAfter, 100*float64(r.Lost)/float64(r.Messages+r.Lost), r.Late)
	}
	if r.SockSendCalls > 0 && r.SockRecvCalls > 0 {
		fmt.Printf("clients' shared sockets (all run): %.1f datagrams per sendmmsg, %.1f per recvmmsg, %d received datagrams dropped\n",
			float64(r.SockSent)/float64(r.SockSendCalls), float64(r.SockRecv)/float64(r.SockRecvCalls), r.SockDropped)
	}
	in, out := float64(s1.inDg-s0.inDg), float64(s1.outDgs-s0.outDgs)
	fmt.Printf("server datagrams: %.0f/s in (%.1f messages, %.0f B each), %.0f/s out (%.1f echoes, %.0f B each)\n",
		in/sec, echoed/in, float64(s1.inB-s0.inB)/in, out/sec, echoed/out, float64(s1.outB-s0.outB)/out)
}

func channelName(ch wire.Channel) string {
	if ch == wire.Unreliable {
		return "unreliable"
	}
	return "reliable"
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
