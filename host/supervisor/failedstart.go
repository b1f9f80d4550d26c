package supervisor

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Configured modules that do not start. The server's own modules (the
// config's modules.load and each --module) are the operator's promise of
// what runs; one whose start fails — a script that does not compile, a
// plugin whose Load refuses its config file, a database it cannot open —
// stays listed, failed, with the error: `module list`, `module info`, the
// metrics' module state, the status page and /readyz all say so, and
// `module load NAME` starts it once it is fixed. The server runs without
// it; clients' messages of its types are refused at once.

// Start loads a configured module into the default scope as Load does;
// if that fails, the module is listed as failed with the error (which is
// also returned) instead of being forgotten.
func (m *Manager) Start(spec Spec) (string, error) {
	name, err := m.Load(spec)
	if err == nil {
		return name, nil
	}
	name = specName(spec)
	if m.def.find(name) != nil {
		return "", err // a module of that name is loaded: the error says so
	}
	inst := m.newInstance(spec)
	inst.manifest.Name = name
	a := &attachment{inst: inst, sc: m.def}
	a.host = &moduleHost{inst: inst, att: a}
	inst.rooms = []*attachment{a}
	m.def.atts = append(m.def.atts, a)
	m.mods = append(m.mods, inst)
	inst.state, inst.neverRan = StateFailed, true
	inst.lastErr = startError(spec.Source, err)
	inst.record("failed to start: " + inst.lastErr)
	inst.log.Error("module failed to start; the server runs without it; fix it, then module load "+spec.Source,
		"name", name, "err", inst.lastErr)
	m.notify(fmt.Sprintf("module %s failed to start: %s; the server runs without it (fix it, then module load %s)",
		name, inst.lastErr, spec.Source))
	return "", err
}

// startError is a failed start's error without the "module SOURCE failed
// to load: " its lines already begin with.
func startError(source string, err error) string {
	msg := oneLine(err.Error())
	for _, p := range []string{"module " + source + " failed to load: ", "module " + source + ": "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			return rest
		}
	}
	return msg
}

// specName is the name a module that never started is listed by: its
// source's file name without the extension ("mmo", "./ctf" → "ctf",
// "scripts/tag.lua" → "tag").
func specName(spec Spec) string {
	base := filepath.Base(spec.Source)
	if n := strings.TrimSuffix(base, filepath.Ext(base)); n != "" {
		return n
	}
	return base
}

// neverStarted returns the failed instance of the scope that a start of
// source left behind (Start), if any: a later load of the same source
// takes its place whatever name its manifest declares.
func (sc *scope) neverStarted(source string) *instance {
	for _, a := range sc.atts {
		if i := a.inst; i.neverRan && i.state == StateFailed && i.spec.Source == source {
			return i
		}
	}
	return nil
}

// abandonTypes tells the transport that the module named name is not
// coming back by itself once every instance of it has failed: its
// clients' messages are refused at once rather than held for a restart
// (docs/protocol.md §10.3).
func (m *Manager) abandonTypes(name string) {
	for _, inst := range m.named(name) {
		if inst.state != StateFailed {
			return
		}
	}
	m.reg.Abandon(name)
}

// oneLine joins an error's lines (go-plugin's handshake errors run over
// several) so that it fits a console line, a log value and a probe.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
