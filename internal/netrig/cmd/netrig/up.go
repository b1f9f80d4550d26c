package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sparkhost/sparkhost/internal/netrig"
)

const upHelp = `commands (one a line on stdin):
  rebind I           force a NAT rebinding of client I
  outage I DURATION  cut client I off for DURATION (e.g. 10s)
  profile I NAME     put client I on profile NAME
  stats              print every link's counters
  quit               tear the rig down and exit`

// up holds a rig up until -for passes, stdin says quit, or a signal comes,
// running the -server command in the server's namespace and the -client
// command in every client's (through sh -c; {server} is the server's
// address, {client} the client's number, {addr} the node's own address).
func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	var rf rigFlags
	rf.register(fs)
	server := fs.String("server", "", "shell command to run in the server's namespace")
	client := fs.String("client", "", "shell command to run in every client's namespace")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := rf.start()
	if err != nil {
		return err
	}
	defer r.Close()
	fmt.Printf("server %s in %s (sudo ip netns exec %s …)\n", r.Server.Addr, r.Server.Name, r.Server.Name)
	fmt.Printf("router %s in %s (NAT %v)\n", r.Router.Addr, r.Router.Name, rf.nat)
	for i := range r.Clients() {
		c := r.Client(i)
		fmt.Printf("client %d %s in %s (%s)\n", i, c.Addr, c.Name, c.Profile())
	}
	expand := func(cmd string, n *netrig.Node, i int) string {
		return strings.NewReplacer("{server}", r.Server.Addr.String(), "{client}", strconv.Itoa(i),
			"{addr}", n.Addr.String()).Replace(cmd)
	}
	if *server != "" {
		if err := startIn(r.Server, "server", expand(*server, r.Server, -1)); err != nil {
			return err
		}
	}
	if *client != "" {
		for i := range r.Clients() {
			c := r.Client(i)
			if err := startIn(&c.Node, fmt.Sprintf("client %d", i), expand(*client, &c.Node, i)); err != nil {
				return err
			}
		}
	}
	fmt.Println(upHelp)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, rf.lifetime)
	defer cancel()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		// End of input is not "quit": `netrig up … </dev/null &` holds on.
	}()
	for {
		select {
		case <-ctx.Done():
			fmt.Println("tearing the rig down")
			return nil
		case line := <-lines:
			if strings.TrimSpace(line) == "quit" {
				return nil
			}
			if err := control(r, line); err != nil {
				fmt.Println(err)
			}
		}
	}
}

// startIn starts a shell command in a node, its output on ours, each line
// headed by who printed it. The rig kills it when it closes.
func startIn(n *netrig.Node, who, command string) error {
	cmd := n.Command(context.Background(), "sh", "-c", command)
	cmd.Stdout = &prefixWriter{w: os.Stdout, prefix: who + ": "}
	cmd.Stderr = &prefixWriter{w: os.Stderr, prefix: who + ": "}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %q in %s: %w", command, n.Name, err)
	}
	go cmd.Wait()
	return nil
}

// prefixWriter heads every line with a prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
	mid    bool // inside a line
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var out []byte
	for _, c := range b {
		if !p.mid {
			out = append(out, p.prefix...)
			p.mid = true
		}
		out = append(out, c)
		if c == '\n' {
			p.mid = false
		}
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// control runs one line of stdin.
func control(r *netrig.Rig, line string) error {
	f := strings.Fields(line)
	if len(f) == 0 {
		return nil
	}
	client := func() (int, error) {
		if len(f) < 2 {
			return 0, fmt.Errorf("%s needs a client number", f[0])
		}
		i, err := strconv.Atoi(f[1])
		if err != nil || i < 0 || i >= r.Clients() {
			return 0, fmt.Errorf("no client %q: the rig has clients 0 to %d", f[1], r.Clients()-1)
		}
		return i, nil
	}
	switch f[0] {
	case "rebind":
		i, err := client()
		if err != nil {
			return err
		}
		if err := r.Rebind(i); err != nil {
			return err
		}
		fmt.Printf("client %d rebound: its next packet leaves from a new port\n", i)
	case "outage":
		i, err := client()
		if err != nil {
			return err
		}
		if len(f) < 3 {
			return fmt.Errorf("outage needs a duration, e.g. outage %d 10s", i)
		}
		d, err := time.ParseDuration(f[2])
		if err != nil {
			return err
		}
		until := r.Outage(i, d)
		fmt.Printf("client %d cut off for %v, until %s\n", i, d, until.Format("15:04:05.000"))
	case "profile":
		i, err := client()
		if err != nil {
			return err
		}
		if len(f) < 3 {
			return fmt.Errorf("profile needs a name, e.g. profile %d mobile", i)
		}
		p, err := netrig.ProfileByName(f[2])
		if err != nil {
			return err
		}
		return r.SetProfile(i, p)
	case "stats":
		for i := range r.Clients() {
			st := r.Stats(i)
			fmt.Printf("client %d (%s): up %+v; down %+v\n", i, r.Client(i).Profile(), st.Up, st.Down)
		}
	default:
		return fmt.Errorf("unknown command %q\n%s", f[0], upHelp)
	}
	return nil
}
