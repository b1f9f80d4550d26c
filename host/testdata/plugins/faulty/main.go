// Command faulty is a test plugin that misbehaves on request: a Ctl
// message (1100, a string) "panic", "exit", "sleep", "spawn" or "echo TEXT"
// (answered with Echo, 1101). It also writes to stdout in init, which the
// SDK's guard must keep off the handshake.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
)

func init() { fmt.Println("faulty: a stray line on stdout before Serve") }

type faulty struct {
	plugin.Base
	h     module.Host
	ticks int
	child *exec.Cmd
}

func (f *faulty) Manifest() module.Manifest {
	return module.Manifest{
		Name: "faulty", Version: "0.1",
		Messages: []wire.Schema{
			{ID: 1100, Name: "Ctl", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 2, MaxLen: 202, RequiresAdmitted: true},
			{ID: 1101, Name: "Echo", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 2, MaxLen: 202, RequiresAdmitted: true},
		},
		Commands: []module.CommandSpec{{Name: "faulty_ticks", Help: "ticks run"}, {Name: "faulty_pid", Help: "process ids"}, {Name: "faulty_clients", Help: "clients the module knows"}},
	}
}

func (f *faulty) Load(h module.Host) error {
	f.h = h
	// Typed values the server's log must keep readable: a duration, a
	// large count.
	h.Log().Info("faulty loaded", "lease", 10*time.Second, "budget", 1500*time.Millisecond, "rows", 12345678)
	return nil
}

func (f *faulty) OnTick(module.Tick) { f.ticks++ }

func (f *faulty) OnMessage(c module.ClientInfo, t wire.MessageType, p []byte) {
	r := wire.NewReader(p)
	cmd := r.Str()
	switch {
	case cmd == "panic":
		panic("boom on request from " + c.Name)
	case cmd == "exit":
		os.Exit(3)
	case cmd == "sleep":
		time.Sleep(30 * time.Second)
	case cmd == "spawn":
		f.child = exec.Command("sleep", "300")
		if err := f.child.Start(); err != nil {
			f.h.Fault(err)
		}
	case strings.HasPrefix(cmd, "echo "):
		w := wire.NewWriter(nil)
		w.Str(strings.TrimPrefix(cmd, "echo "))
		if err := f.h.Send(c.ID, 1101, w.Bytes()); err != nil {
			f.h.Fault(err)
		}
	}
}

func (f *faulty) Command(name string, _ []string) (string, error) {
	switch name {
	case "faulty_ticks":
		return fmt.Sprint(f.ticks), nil
	case "faulty_clients":
		var names []string
		for _, c := range f.h.Clients() {
			names = append(names, c.Name)
		}
		return strings.Join(names, " "), nil
	case "faulty_pid":
		s := fmt.Sprint(os.Getpid())
		if f.child != nil && f.child.Process != nil {
			s += fmt.Sprint(" ", f.child.Process.Pid)
		}
		return s, nil
	}
	return "", fmt.Errorf("no such command %q", name)
}

func main() { plugin.Serve(&faulty{}) }
