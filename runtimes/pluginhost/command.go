package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

// Console commands run on the game thread (the admin console executes them
// between ticks), so a command waits for the plugin's answer at most
// CommandWait (100 ms, six ticks at 60 Hz). A plugin that answers later —
// it is busy with a Step that runs behind, or the command is slow — gets
// ErrBusy for an answer; its real answer, when it comes, is logged and its
// actions are applied at the next tick. At most maxPendingCommands answers
// may be outstanding; a plugin that leaves a command unanswered for
// HangTimeout is hung and killed like one that leaves a Step unanswered.

// ErrBusy is a console command's error when the plugin did not answer in
// time.
var ErrBusy = errors.New("the plugin is busy")

// maxPendingCommands bounds the commands whose answer has not come yet.
const maxPendingCommands = 4

// maxCommandOutput bounds the output of a command the console prints.
const maxCommandOutput = 64 << 10

type pendingCommand struct {
	name string
	sent time.Time
	done chan commandAnswer
}

type commandAnswer struct {
	resp *pluginv1.CommandResponse
	err  error
}

// Command runs a console command in the plugin.
func (m *Module) Command(name string, args []string) (string, error) {
	if err := m.check(); err != nil {
		return "", err
	}
	if m.rpc == nil {
		return "", errors.New("plugin: Command before Load")
	}
	m.collectCommands()
	if m.dead != nil {
		return "", m.dead
	}
	if len(m.cmds) >= maxPendingCommands {
		return "", fmt.Errorf("%w: module %s has not answered its last %d commands yet; try again later", ErrBusy, m.name, len(m.cmds))
	}
	p := &pendingCommand{name: name, sent: time.Now(), done: make(chan commandAnswer, 1)}
	ctx, rpc, hang := m.ctx, m.rpc, m.cfg.HangTimeout
	go func() {
		cctx, cancel := context.WithTimeout(ctx, hang)
		resp, err := rpc.Command(cctx, &pluginv1.CommandRequest{Name: name, Args: args})
		cancel()
		p.done <- commandAnswer{resp: resp, err: err}
	}()
	t := time.NewTimer(m.cfg.CommandWait)
	defer t.Stop()
	select {
	case a := <-p.done:
		return m.commandAnswered(a)
	case <-t.C:
		m.cmds = append(m.cmds, p)
		return "", fmt.Errorf("%w: module %s did not answer %s within %v (it runs behind the server or the command is slow); its answer will be logged when it comes",
			ErrBusy, m.name, name, m.cfg.CommandWait)
	}
}

// commandAnswered applies a command's answer and returns its output.
func (m *Module) commandAnswered(a commandAnswer) (string, error) {
	if a.err != nil {
		if m.dead != nil {
			return "", m.dead
		}
		return "", m.crashed(a.err)
	}
	m.apply(a.resp.GetActions())
	out := a.resp.GetOutput()
	if len(out) > maxCommandOutput {
		out = out[:maxCommandOutput] + "…"
	}
	if e := a.resp.GetError(); e != "" {
		if len(e) > maxFaultText {
			e = e[:maxFaultText] + "…"
		}
		return out, errors.New(e)
	}
	return out, nil
}

// collectCommands takes the answers of late commands that have arrived:
// their actions are applied and their output logged. A failed call means
// the process is gone: the module crashes.
func (m *Module) collectCommands() {
	kept := m.cmds[:0]
	for _, p := range m.cmds {
		select {
		case a := <-p.done:
			out, err := m.commandAnswered(a)
			if m.dead != nil {
				continue
			}
			m.logs.log().Info(fmt.Sprintf("module %s answered command %s late, after %v", m.name, p.name, time.Since(p.sent).Round(time.Millisecond)),
				"output", out, "err", err)
		default:
			kept = append(kept, p)
		}
	}
	clear(m.cmds[len(kept):])
	m.cmds = kept
}
