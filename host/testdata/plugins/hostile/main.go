// Command hostile is a test plugin that abuses its resources on command, for
// the fault-model tests (docs/go-plugins.md, "Limits"):
//
//	hostile_sleep MS   sleep MS milliseconds in every tick from now on
//	hostile_stall MS   sleep MS milliseconds in the next tick only
//	hostile_eat MIB    keep MIB more MiB resident every tick from now on
//	hostile_flood N    log N records now (Host.Log)
//	hostile_print N    write N lines to os.Stderr now
//	hostile_score      add a score action for client 1 (the server's side of it may panic in a test)
//	hostile_ticks      the ticks run so far
//	hostile_memlimit   the Go runtime's memory limit (GOMEMLIMIT), in bytes
//	hostile_exit       exit the process at once (a crash)
//
// When the environment names a file in HOSTILE_LOAD_STALL_FILE and that
// file holds a number, Load sleeps that many milliseconds (a plugin that
// starts slowly).
// Each command answers at once; the abuse happens in the ticks.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
)

type hostile struct {
	plugin.Base
	h     module.Host
	ticks int
	sleep time.Duration
	stall time.Duration
	eat   int // MiB a tick
	kept  [][]byte
}

func (m *hostile) Manifest() module.Manifest {
	cmd := func(name, usage string) module.CommandSpec {
		return module.CommandSpec{Name: name, Usage: usage, Help: "misbehave (test plugin)"}
	}
	return module.Manifest{
		Name: "hostile", Version: "1",
		Messages: []wire.Schema{
			{ID: 1300, Name: "Poke", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 0, MaxLen: 16, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
			{ID: 1301, Name: "Poked", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 0, MaxLen: 16, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		},
		Commands: []module.CommandSpec{
			cmd("hostile_sleep", "MS"), cmd("hostile_eat", "MIB"), cmd("hostile_flood", "N"),
			cmd("hostile_print", "N"), cmd("hostile_score", ""), cmd("hostile_ticks", ""),
			cmd("hostile_stall", "MS"), cmd("hostile_memlimit", ""), cmd("hostile_exit", ""),
		},
		// HOSTILE_NEXT_TICK=1: the manifest asks for its answers at the
		// next tick (pluginhost's TestNextTickAnswersApplyAtTheNextStep).
		AnswersNextTick: os.Getenv("HOSTILE_NEXT_TICK") == "1",
	}
}

func (m *hostile) Load(h module.Host) error {
	m.h = h
	if f := os.Getenv("HOSTILE_LOAD_STALL_FILE"); f != "" {
		if b, err := os.ReadFile(f); err == nil {
			if ms, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				time.Sleep(time.Duration(ms) * time.Millisecond)
			}
		}
	}
	return nil
}

// OnMessage answers a Poke with a Poked of the same bytes.
func (m *hostile) OnMessage(c module.ClientInfo, _ wire.MessageType, p []byte) {
	if err := m.h.Send(c.ID, 1301, p); err != nil {
		m.h.Fault(err)
	}
}

func (m *hostile) OnTick(module.Tick) {
	m.ticks++
	if m.sleep > 0 {
		time.Sleep(m.sleep)
	}
	if m.stall > 0 {
		time.Sleep(m.stall)
		m.stall = 0
	}
	if m.eat > 0 {
		b := make([]byte, m.eat<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // resident, not just reserved
		}
		m.kept = append(m.kept, b)
	}
}

func (m *hostile) Command(name string, args []string) (string, error) {
	n := 0
	if len(args) > 0 {
		var err error
		if n, err = strconv.Atoi(args[0]); err != nil {
			return "", err
		}
	}
	switch name {
	case "hostile_sleep":
		m.sleep = time.Duration(n) * time.Millisecond
	case "hostile_stall":
		m.stall = time.Duration(n) * time.Millisecond
	case "hostile_memlimit":
		return strconv.FormatInt(debug.SetMemoryLimit(-1), 10), nil
	case "hostile_eat":
		m.eat = n
	case "hostile_flood":
		for i := range n {
			m.h.Log().Info("flood", "line", i)
		}
	case "hostile_print":
		for i := range n {
			fmt.Fprintln(os.Stderr, "print", i)
		}
	case "hostile_score":
		m.h.AddScore(1, 1, 0, 0)
	case "hostile_exit":
		os.Exit(3)
	case "hostile_ticks":
		return strconv.Itoa(m.ticks), nil
	default:
		return "", fmt.Errorf("no such command %q", name)
	}
	return "ok", nil
}

func main() { plugin.Serve(&hostile{}) }
