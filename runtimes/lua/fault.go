package lua

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Fault is one thing a script did wrong: an error it raised, a budget it
// overran, a cap it hit. The runtime reports it through Host.Fault and the
// module goes on. It wraps ErrScript, ErrBudget or ErrHeapCap.
type Fault struct {
	Module    string // the module's name
	File      string // the script's file name (the chunk name in Lua messages)
	Line      int    // the line the fault happened on; 0 when unknown
	Where     string // what was running: "load", "on_tick", "on_message(1100)", "timer 3", "command tag_status", ...
	Err       error  // ErrScript, ErrBudget or ErrHeapCap
	Message   string // what happened, without the file:line prefix
	Traceback string // the Lua stack traceback, when there was a Lua stack
}

// Error renders the fault as "module NAME: FILE:LINE: MESSAGE (in WHERE)",
// followed by the traceback on the next lines when there is one: the
// manager logs it as it is.
func (f *Fault) Error() string {
	var b strings.Builder
	b.WriteString("module ")
	b.WriteString(f.Module)
	b.WriteString(": ")
	b.WriteString(f.File)
	if f.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(f.Line))
	}
	b.WriteString(": ")
	b.WriteString(f.Message)
	if f.Where != "" {
		b.WriteString(" (in ")
		b.WriteString(f.Where)
		b.WriteByte(')')
	}
	if f.Traceback != "" {
		b.WriteByte('\n')
		b.WriteString(f.Traceback)
	}
	return b.String()
}

// Unwrap returns the kind of the fault.
func (f *Fault) Unwrap() error { return f.Err }

// Location returns the file and line of the fault (line 0: unknown), for a
// caller that knows only the error interface.
func (f *Fault) Location() (file string, line int) { return f.File, f.Line }

// StackTrace returns the Lua traceback, or "".
func (f *Fault) StackTrace() string { return f.Traceback }

// maxFaultMessage bounds the message a fault carries: a script may raise an
// error with a megabyte of text, and faults end up in logs.
const maxFaultMessage = 1 << 10

// faultFrom turns a failed PCall into a Fault, classifying it: a budget
// overrun (the VM's context error, or a builtin that stopped at the
// deadline), a memory fault (the build allowance ran out), or a script error.
func (m *Module) faultFrom(s site, err error) *Fault {
	f := &Fault{Module: m.name(), File: m.chunk, Where: s.String(), Err: ErrScript}
	msg := err.Error()
	var ae *lua.ApiError
	if errors.As(err, &ae) {
		if ae.Object != nil {
			msg = ae.Object.String()
		}
		f.Traceback = ae.StackTrace
	}
	if len(msg) > maxFaultMessage {
		msg = msg[:maxFaultMessage] + "…"
	}
	f.Line, f.Message = m.splitPosition(msg)
	if f.Line == 0 {
		f.Line = m.lineInTraceback(f.Traceback)
	}
	switch {
	case m.budget.memory:
		f.Err = ErrHeapCap
	case m.budget.overran || strings.HasSuffix(msg, context.DeadlineExceeded.Error()) && m.expired():
		f.Err = ErrBudget
		f.Message = m.budgetMessage()
	}
	return f
}

// budgetFault reports work that ended past the deadline without the VM
// noticing (a Go builtin that ran to the end of its bounded input).
func (m *Module) budgetFault(s site, line int, tb string) *Fault {
	return &Fault{Module: m.name(), File: m.chunk, Line: line, Where: s.String(), Err: ErrBudget,
		Message: m.budgetMessage(), Traceback: tb}
}

func (m *Module) budgetMessage() string {
	if m.budget.limit > 0 {
		return fmt.Sprintf("stopped: ran past its time budget of %v", m.budget.limit)
	}
	return fmt.Sprintf("stopped: ran past the tick's time budget (tick %d); the rest of this tick's Lua work was skipped", m.tick)
}

func (m *Module) heapFault(where string, estimate int64) *Fault {
	return &Fault{Module: m.name(), File: m.chunk, Where: where, Err: ErrHeapCap,
		Message: fmt.Sprintf("the module's Lua heap is about %d bytes, over its cap of %d; drop references to data it no longer needs",
			estimate, m.cfg.HeapCap)}
}

// splitPosition splits "file.lua:12: message" into 12 and "message".
func (m *Module) splitPosition(msg string) (int, string) {
	rest, ok := strings.CutPrefix(msg, m.chunk+":")
	if !ok {
		return 0, msg
	}
	digits, text, ok := strings.Cut(rest, ":")
	if !ok {
		return 0, msg
	}
	line, err := strconv.Atoi(digits)
	if err != nil {
		return 0, msg
	}
	return line, strings.TrimPrefix(text, " ")
}

// lineInTraceback finds the first line of the script in a traceback, for
// errors raised with a non-string value or level 0.
func (m *Module) lineInTraceback(tb string) int {
	for l := range strings.SplitSeq(tb, "\n") {
		l = strings.TrimSpace(l)
		if line, _ := m.splitPosition(l); line > 0 {
			return line
		}
	}
	return 0
}

// syntaxLine extracts the line of a compile error.
func syntaxLine(err error) int {
	var se *syntaxError
	if errors.As(err, &se) {
		return se.line
	}
	return 0
}
