package wire

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ModuleProtocols (type 22, protocol v4, docs/protocol.md §10.4): the
// protocol version of each module's own messages, newest and oldest
// served, announced beside ModuleSchemas with the same revision.
//
//	revision u32, count u16, count × entry (module names ascending, no repeats)
//	entry = module str (§1's name rule, 1..64 bytes), protocol u16 (≥ 1),
//	        oldest u16 (1..protocol)

// TypeModuleProtocols is the module protocol announcement (ServerToClient,
// Reliable, v4 sessions only).
const TypeModuleProtocols MessageType = 22

// ModuleProtocol is one module's protocol: the newest version it speaks
// and the oldest it still serves.
type ModuleProtocol struct {
	Module   string
	Protocol uint16
	Oldest   uint16
}

// Serves reports whether a client speaking version v is served.
func (p ModuleProtocol) Serves(v uint16) bool { return v >= p.Oldest && v <= p.Protocol }

// ModuleProtocols is the payload of the announcement.
type ModuleProtocols struct {
	Revision uint32 // the revision of the ModuleSchemas it accompanies
	Modules  []ModuleProtocol
}

// ErrBadProtocol is returned for a protocol declaration that breaks the
// rules: a version of 0, or an oldest above the newest.
var ErrBadProtocol = errors.New("wire: module protocol: need 1 ≤ oldest ≤ protocol")

// CheckProtocol validates a module's declared protocol.
func CheckProtocol(p ModuleProtocol) error {
	if p.Protocol == 0 || p.Oldest == 0 || p.Oldest > p.Protocol {
		return ErrBadProtocol
	}
	return nil
}

// AppendModuleProtocols appends the encoding of m; Modules must be sorted
// by name (Registry.ModuleProtocols returns them so).
func AppendModuleProtocols(dst []byte, m *ModuleProtocols) []byte {
	w := Writer{b: dst}
	w.U32(m.Revision)
	w.U16(uint16(len(m.Modules)))
	for _, p := range m.Modules {
		w.Str(p.Module)
		w.U16(p.Protocol)
		w.U16(p.Oldest)
	}
	return w.b
}

var errProtocolsOrder = &payloadError{"module protocol entries not in ascending name order, or repeated", nil}

// Sizes: the smallest payload (a revision and a count) and entry (a
// 1-byte name and two versions).
const (
	moduleProtocolsMin = 6
	protocolEntryMin   = 2 + 1 + 2 + 2
)

// ParseModuleProtocols parses an announcement: every name valid, names
// ascending without repeats, 1 ≤ oldest ≤ protocol, nothing after the last
// entry. The result does not alias p.
func ParseModuleProtocols(p []byte) (ModuleProtocols, error) {
	r := NewReader(p)
	m := ModuleProtocols{Revision: r.U32()}
	n := int(r.U16())
	if !r.HasError() && n > r.Remaining()/protocolEntryMin {
		return ModuleProtocols{}, errSchemaCount // judged before any entry is read
	}
	var prev []byte
	for i := 0; i < n && !r.HasError(); i++ {
		name := r.Name(MaxSchemaNameLen)
		e := ModuleProtocol{Protocol: r.U16(), Oldest: r.U16()}
		if r.HasError() {
			break
		}
		if i > 0 && strings.Compare(string(prev), string(name)) >= 0 {
			r.Fail(errProtocolsOrder)
			break
		}
		if CheckProtocol(e) != nil {
			r.Fail(errSchemaRule)
			break
		}
		prev = name
		e.Module = string(name)
		m.Modules = append(m.Modules, e)
	}
	if err := finish(&r); err != nil {
		return ModuleProtocols{}, err
	}
	return m, nil
}

// Lookup returns the protocol of module, and whether the table names it.
func (m *ModuleProtocols) Lookup(module string) (ModuleProtocol, bool) {
	i, ok := slices.BinarySearchFunc(m.Modules, module, func(p ModuleProtocol, name string) int { return strings.Compare(p.Module, name) })
	if !ok {
		return ModuleProtocol{}, false
	}
	return m.Modules[i], true
}

// SetProtocol declares the protocol of owner's messages (a module's newest
// version and the oldest it serves), announced in ModuleProtocols. It
// counts as a change of the module types (the revision grows), and it goes
// with owner's types when UnregisterOwner removes them. A module that
// declares nothing is announced as protocol 1, oldest 1, once it has types.
func (r *Registry) SetProtocol(owner string, p ModuleProtocol) error {
	p.Module = owner
	if err := CheckProtocol(p); err != nil {
		return err
	}
	if owner == BuiltinOwner || !ValidName([]byte(owner), MaxSchemaNameLen) {
		return fmt.Errorf("%w: module %q", ErrBadSchema, owner)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.protocolMap()
	if cur, ok := old[owner]; ok && cur == p {
		return nil
	}
	next := make(map[string]ModuleProtocol, len(old)+1)
	maps.Copy(next, old)
	next[owner] = p
	r.protocols.Store(&next)
	r.rev.Add(1)
	return nil
}

// dropProtocolLocked forgets owner's declaration (under r.mu).
func (r *Registry) dropProtocolLocked(owner string) {
	old := r.protocolMap()
	if _, ok := old[owner]; !ok {
		return
	}
	next := maps.Clone(old)
	delete(next, owner)
	r.protocols.Store(&next)
}

func (r *Registry) protocolMap() map[string]ModuleProtocol {
	if p := r.protocols.Load(); p != nil {
		return *p
	}
	return nil
}

// ModuleProtocols returns the protocol of every module that has types now,
// by name: the declared one, or 1..1 for a module that declared none.
func (r *Registry) ModuleProtocols() []ModuleProtocol {
	declared := r.protocolMap()
	seen := map[string]bool{}
	var out []ModuleProtocol
	for _, t := range r.types() {
		if t.owner == BuiltinOwner || t.gone || seen[t.owner] {
			continue
		}
		seen[t.owner] = true
		p, ok := declared[t.owner]
		if !ok {
			p = ModuleProtocol{Module: t.owner, Protocol: 1, Oldest: 1}
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b ModuleProtocol) int { return strings.Compare(a.Module, b.Module) })
	return out
}
