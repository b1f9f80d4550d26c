package netrig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nsPrefix starts the name of every namespace the rig makes. A name is
// nsPrefix + owner pid + "-" + the owner's start time + "-" + rig number +
// "-" + role, so that a sweep can tell a live rig's namespaces (owner alive,
// same start time) from those a dead process left behind.
const nsPrefix = "snrig-"

const netnsDir = "/run/netns"

// cmdTimeout bounds every ip, nft, tc and conntrack run.
const cmdTimeout = 20 * time.Second

// owner is this process as a namespace name records it.
func owner() (string, error) {
	st, err := startTime(os.Getpid())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d-%s", os.Getpid(), st), nil
}

// startTime is field 22 of /proc/PID/stat: the process's start time in
// clock ticks since boot, which tells a reused pid from its first owner.
func startTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) may hold spaces; fields count from its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", fmt.Errorf("netrig: /proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", fmt.Errorf("netrig: /proc/%d/stat: %d fields", pid, len(f))
	}
	return f[19], nil
}

// ownerAlive reports whether the process a namespace name records still runs.
func ownerAlive(name string) bool {
	rest, ok := strings.CutPrefix(name, nsPrefix)
	if !ok {
		return true
	}
	f := strings.SplitN(rest, "-", 3)
	if len(f) < 3 {
		return false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return false
	}
	st, err := startTime(pid)
	return err == nil && st == f[1]
}

// Sweep removes the namespaces that rigs of dead processes left behind (a
// test binary killed by its timeout cannot run its cleanups), and returns
// their names. Namespaces of live rigs, this process's included, are left
// alone. Start calls it.
func Sweep() ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, nsPrefix) || ownerAlive(name) {
			continue
		}
		killNamespace(name)
		if err := deleteNamespace(name); err != nil {
			if _, serr := os.Stat(filepath.Join(netnsDir, name)); errors.Is(serr, os.ErrNotExist) ||
				strings.Contains(err.Error(), "No such file or directory") {
				continue // another process's sweep was first
			}
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// Node is one namespace of the rig: the server, the router or a client.
type Node struct {
	// Name is the network namespace's name: `ip netns exec Name …` runs a
	// command in it by hand.
	Name string
	// Addr is the node's address inside the rig (the router's is its
	// server-side one, which is also the NAT's public address).
	Addr netip.Addr

	rig *Rig
}

// Command returns a command that runs name with args inside the node's
// namespace (through `ip netns exec`, which execs it: the command's pid is
// the program's). It is killed when ctx is done or the rig closes, and when
// this process dies.
func (n *Node) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(n.rig.ctx, cancel)
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	n.rig.track(func() { stop(); cancel() })
	return cmd
}

// Run starts name with args inside the node's namespace, its output going
// to the rig's log line by line, and returns the started command; the
// caller may Wait for it. It is killed when the rig closes.
func (n *Node) Run(name string, args ...string) (*exec.Cmd, error) {
	cmd := n.Command(context.Background(), name, args...)
	label := n.role() + ": " + filepath.Base(name)
	cmd.Stdout = &lineLog{logf: n.rig.logf, label: label}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("netrig: start %s in %s: %w", name, n.Name, err)
	}
	return cmd, nil
}

// Do runs fn on an OS thread that has entered the node's namespace: the
// sockets fn opens belong to the namespace and keep belonging to it after
// Do returns. Goroutines fn starts do not run in the namespace.
func (n *Node) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// The thread is unlocked only once it is back in its own namespace;
		// otherwise the goroutine ends locked and the runtime discards it.
		runtime.LockOSThread()
		errc <- n.doLocked(fn)
	}()
	return <-errc
}

func (n *Node) doLocked(fn func() error) error {
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("netrig: open own namespace: %w", err)
	}
	defer unix.Close(self)
	target, err := unix.Open(filepath.Join(netnsDir, n.Name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("netrig: open namespace %s: %w", n.Name, err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("netrig: enter namespace %s: %w", n.Name, err)
	}
	ferr := fn()
	if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
		return errors.Join(ferr, fmt.Errorf("netrig: leave namespace %s: %w", n.Name, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// ListenUDP opens a UDP socket inside the node's namespace, bound to the
// node's address and port (0: any free port).
func (n *Node) ListenUDP(port int) (*net.UDPConn, error) {
	var conn *net.UDPConn
	err := n.Do(func() error {
		var err error
		conn, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(n.Addr, uint16(port))))
		return err
	})
	return conn, err
}

// role is the last part of the namespace name: "server", "router", "c0".
func (n *Node) role() string { return n.Name[strings.LastIndexByte(n.Name, '-')+1:] }

// run runs a command in the node's namespace to completion, with a bound.
func (n *Node) run(stdin string, name string, args ...string) error {
	return runCmd(stdin, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

func runCmd(stdin string, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		line := strings.Join(append([]string{name}, args...), " ")
		if stdin != "" {
			line += " <<" + strings.ReplaceAll(strings.TrimSpace(stdin), "\n", "; ")
		}
		return fmt.Errorf("netrig: %s: %w: %s", line, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// batch runs `ip` commands (one a line, without the leading "ip") in the
// node's namespace in one process.
func (n *Node) batch(lines ...string) error {
	return runCmd(strings.Join(lines, "\n")+"\n", "ip", "-n", n.Name, "-batch", "-")
}

func addNamespace(name string) error { return runCmd("", "ip", "netns", "add", name) }

func deleteNamespace(name string) error { return runCmd("", "ip", "netns", "delete", name) }

// killNamespace kills every process inside a namespace and waits (briefly)
// for them to go, so that deleting it frees its devices at once.
func killNamespace(name string) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		out, err := exec.CommandContext(ctx, "ip", "netns", "pids", name).Output()
		cancel()
		pids := strings.Fields(string(out))
		if err != nil || len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil && pid != os.Getpid() {
				unix.Kill(pid, unix.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lineLog writes a command's output to a log function, one call a line.
type lineLog struct {
	logf  func(string, ...any)
	label string
	buf   []byte
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.logf("%s: %s", l.label, l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 4096 {
		l.logf("%s: %s", l.label, l.buf)
		l.buf = l.buf[:0]
	}
	return len(p), nil
}
