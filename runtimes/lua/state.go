package lua

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Hot reload: the old instance's save_state() returns a value, SaveState
// serializes it, the manager loads the new instance and hands the bytes to
// its RestoreState, which calls the new script's on_reload(state).
//
// What can be carried: nil, booleans, numbers, strings and tables of those
// (keys: strings, numbers or booleans), at most maxStateDepth tables deep
// and maxStateBytes serialized. A cycle is an error; a table referenced
// twice is carried twice (as two tables).
//
// Encoding: the magic "SPK1", then one value: 'n' nil, 'f' false, 't'
// true, 'd' + 8 bytes of float64 (little-endian), 's' + uvarint length +
// bytes, 'T' + uvarint pair count + pairs (key, value).

const (
	stateMagic    = "SPK1"
	maxStateBytes = 1 << 20
	maxStateDepth = 64
)

// ErrState wraps a state that cannot be carried across a reload.
var ErrState = errors.New("lua: reload state")

// SaveState calls the script's global save_state(), if it defines one,
// under CommandBudget and serializes what it returns. A script without
// save_state carries nothing: SaveState returns nil, nil.
func (m *Module) SaveState() ([]byte, error) {
	if m.phase != phaseRunning {
		return nil, ErrNotLoaded
	}
	fn, ok := m.L.G.Global.RawGetString("save_state").(*lua.LFunction)
	if !ok {
		return nil, nil
	}
	m.begin(time.Now().Add(m.cfg.CommandBudget), m.cfg.CommandBudget)
	defer m.end()
	if f := m.call(site{what: "save_state"}, fn, 1); f != nil {
		return nil, f
	}
	v := m.L.Get(-1)
	m.L.Pop(1)
	e := stateEncoder{b: []byte(stateMagic), onPath: make(map[*lua.LTable]bool)}
	err := e.value(v, 0)
	if err == nil && len(e.b) > maxStateBytes {
		err = fmt.Errorf("a value larger than %d bytes", maxStateBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: module %s: save_state returned %w", ErrState, m.name(), err)
	}
	return e.b, nil
}

// RestoreState decodes state and calls the script's global
// on_reload(state), if it defines one, under CommandBudget. Called on the
// new instance after Load; nil state (nothing was saved) does nothing.
func (m *Module) RestoreState(state []byte) error {
	if m.phase != phaseRunning {
		return ErrNotLoaded
	}
	if state == nil {
		return nil
	}
	d := stateDecoder{L: m.L, b: state}
	v, err := d.decode()
	if err != nil {
		return fmt.Errorf("%w: module %s: %w", ErrState, m.name(), err)
	}
	fn, ok := m.L.G.Global.RawGetString("on_reload").(*lua.LFunction)
	if !ok {
		return nil
	}
	m.begin(time.Now().Add(m.cfg.CommandBudget), m.cfg.CommandBudget)
	f := m.call(site{what: "on_reload"}, fn, 0, v)
	m.end()
	if f != nil {
		return f
	}
	if est, over := m.heap.measureAll(m); over {
		return m.heapFault("on_reload", est)
	}
	return nil
}

type stateEncoder struct {
	b      []byte
	onPath map[*lua.LTable]bool
}

func (e *stateEncoder) value(v lua.LValue, depth int) error {
	if len(e.b) > maxStateBytes {
		return fmt.Errorf("a value larger than %d bytes", maxStateBytes)
	}
	switch v := v.(type) {
	case *lua.LNilType:
		e.b = append(e.b, 'n')
	case lua.LBool:
		if v {
			e.b = append(e.b, 't')
		} else {
			e.b = append(e.b, 'f')
		}
	case lua.LNumber:
		e.b = append(e.b, 'd')
		e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(float64(v)))
	case lua.LString:
		e.b = append(e.b, 's')
		e.b = binary.AppendUvarint(e.b, uint64(len(v)))
		e.b = append(e.b, v...)
	case *lua.LTable:
		return e.table(v, depth)
	default:
		return fmt.Errorf("a %s, which cannot be carried (only nil, booleans, numbers, strings and tables of those)", v.Type())
	}
	return nil
}

func (e *stateEncoder) table(t *lua.LTable, depth int) error {
	if depth >= maxStateDepth {
		return fmt.Errorf("tables nested more than %d deep", maxStateDepth)
	}
	if e.onPath[t] {
		return errors.New("a table that contains itself (a cycle)")
	}
	e.onPath[t] = true
	defer delete(e.onPath, t)
	var pairs []lua.LValue
	var err error
	t.ForEach(func(k, v lua.LValue) {
		if err != nil {
			return
		}
		switch k.(type) {
		case lua.LString, lua.LNumber, lua.LBool:
		default:
			err = fmt.Errorf("a table with a %s key (keys must be strings, numbers or booleans)", k.Type())
			return
		}
		pairs = append(pairs, k, v)
		if len(pairs) > maxStateBytes {
			err = fmt.Errorf("a value larger than %d bytes", maxStateBytes)
		}
	})
	if err != nil {
		return err
	}
	e.b = append(e.b, 'T')
	e.b = binary.AppendUvarint(e.b, uint64(len(pairs)/2))
	for _, v := range pairs {
		if err := e.value(v, depth+1); err != nil {
			return err
		}
	}
	return nil
}

type stateDecoder struct {
	L   *lua.LState
	b   []byte
	off int
}

var errStateCorrupt = errors.New("the saved state is corrupt")

func (d *stateDecoder) decode() (lua.LValue, error) {
	if len(d.b) > maxStateBytes+len(stateMagic)+16 || len(d.b) < len(stateMagic) || string(d.b[:len(stateMagic)]) != stateMagic {
		return nil, errStateCorrupt
	}
	d.off = len(stateMagic)
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.off != len(d.b) {
		return nil, errStateCorrupt
	}
	return v, nil
}

func (d *stateDecoder) uvarint() (int, error) {
	n, k := binary.Uvarint(d.b[d.off:])
	if k <= 0 || n > uint64(len(d.b)) {
		return 0, errStateCorrupt
	}
	d.off += k
	return int(n), nil
}

func (d *stateDecoder) value(depth int) (lua.LValue, error) {
	if d.off >= len(d.b) {
		return nil, errStateCorrupt
	}
	tag := d.b[d.off]
	d.off++
	switch tag {
	case 'n':
		return lua.LNil, nil
	case 'f':
		return lua.LFalse, nil
	case 't':
		return lua.LTrue, nil
	case 'd':
		if len(d.b)-d.off < 8 {
			return nil, errStateCorrupt
		}
		x := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off:]))
		d.off += 8
		return lua.LNumber(x), nil
	case 's':
		n, err := d.uvarint()
		if err != nil || n > len(d.b)-d.off {
			return nil, errStateCorrupt
		}
		s := lua.LString(d.b[d.off : d.off+n])
		d.off += n
		return s, nil
	case 'T':
		return d.table(depth)
	}
	return nil, errStateCorrupt
}

func (d *stateDecoder) table(depth int) (lua.LValue, error) {
	if depth >= maxStateDepth {
		return nil, errStateCorrupt
	}
	n, err := d.uvarint()
	if err != nil || n > (len(d.b)-d.off)/2 {
		return nil, errStateCorrupt
	}
	t := d.L.NewTable()
	for range n {
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		switch k := k.(type) {
		case lua.LString, lua.LBool:
		case lua.LNumber:
			if math.IsNaN(float64(k)) {
				return nil, errStateCorrupt
			}
		default:
			return nil, errStateCorrupt
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		t.RawSet(k, v)
	}
	return t, nil
}
