package lua

import (
	"reflect"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Measuring a module's Lua heap.
//
// gopher-lua allocates from the Go heap and has no allocator hook, and
// runtime.ReadMemStats is process-wide and stops the world. So the heap is
// estimated by walking what the module can reach: the globals, the registry,
// and the functions the runtime holds for it (hooks, handlers, commands,
// timers), following tables (keys, values, metatables), functions
// (upvalues, environment) and userdata (metatable, environment). Each value
// is charged an approximation of its Go footprint:
//
//   - a table: 96 bytes, plus 16 per array slot (capacity), 48 per hash
//     entry, and 16+40 per entry of gopher-lua's iteration index. The
//     lengths are read from LTable's unexported fields by reflection (a
//     field missing in a future version falls back to 64 bytes per entry
//     visited). The iteration index keeps deleted keys (a gopher-lua
//     limitation), so a table whose keys churn keeps growing, and the
//     estimate sees it;
//   - a string: its length plus 16, once per distinct backing array when at
//     least 256 bytes long, every time it is referenced when shorter (a
//     small over-count);
//   - a number: 8 (boxed in an interface); a function: 64 plus 56 per
//     upvalue; a userdata: 64.
//
// Not counted: function prototypes (bounded by the source, ≤ 1 MiB), the
// Lua data stack (bounded by RegistryMaxSize and empty between ticks),
// Go-side state of the runtime (bounded: timers, handlers), and garbage not
// yet collected (the per-call build allowance bounds how fast strings turn
// into garbage).
//
// The walk is incremental so that it never holds a tick for long: a round
// starts every heapRoundEvery Steps and visits at most heapSliceValues
// values per Step, resuming tables where it left them with LTable.Next.
// Mutations between slices make the result an estimate — values added to a
// table already walked are missed until the next round, values removed
// after being counted are over-counted — which is what a cap needs: a
// heap that keeps growing is caught within a round or two. A round stops
// as soon as its running total exceeds HeapCap, so the work per round is
// bounded by the cap too. Load (and RestoreState) measure with a full walk.
const (
	heapRoundEvery  = 4
	heapSliceValues = 20000
	longString      = 256
)

// tableLayout locates LTable's unexported fields, for their lengths only.
var tableLayout = func() (l struct {
	ok                              bool
	array, dict, strdict, keys, k2i int
}) {
	t := reflect.TypeFor[lua.LTable]()
	idx := func(name string, kind reflect.Kind) int {
		f, ok := t.FieldByName(name)
		if !ok || f.Type.Kind() != kind || len(f.Index) != 1 {
			return -1
		}
		return f.Index[0]
	}
	l.array, l.dict, l.strdict = idx("array", reflect.Slice), idx("dict", reflect.Map), idx("strdict", reflect.Map)
	l.keys, l.k2i = idx("keys", reflect.Slice), idx("k2i", reflect.Map)
	l.ok = l.array >= 0 && l.dict >= 0 && l.strdict >= 0 && l.keys >= 0 && l.k2i >= 0
	return l
}()

func tableBytes(t *lua.LTable) int64 {
	if !tableLayout.ok {
		return 96
	}
	v := reflect.ValueOf(t).Elem()
	n := 96 +
		16*v.Field(tableLayout.array).Cap() +
		48*v.Field(tableLayout.dict).Len() +
		48*v.Field(tableLayout.strdict).Len() +
		16*v.Field(tableLayout.keys).Cap() +
		40*v.Field(tableLayout.k2i).Len()
	return int64(n)
}

type walkItem struct {
	v   lua.LValue
	key lua.LValue // a table's resume key; nil until the table is charged
}

type heapMeter struct {
	active   bool
	sinceEnd int // Steps since the last round ended
	total    int64
	stack    []walkItem
	seen     map[any]struct{}
	long     map[*byte]struct{}
	estimate int64 // the last complete (or capped) round's total
}

func (h *heapMeter) start(m *Module) {
	h.active = true
	h.total = 0
	h.stack = h.stack[:0]
	if h.seen == nil {
		h.seen = make(map[any]struct{})
		h.long = make(map[*byte]struct{})
	}
	clear(h.seen)
	clear(h.long)
	h.visit(m.L.G.Global)
	h.visit(m.L.G.Registry)
	for _, f := range m.hooks {
		if f != nil {
			h.visit(f)
		}
	}
	for _, f := range m.handlers {
		h.visit(f)
	}
	for _, f := range m.commands {
		h.visit(f)
	}
	for _, t := range m.timers.byID {
		h.visit(t.fn)
	}
}

func (h *heapMeter) visit(v lua.LValue) {
	switch v := v.(type) {
	case lua.LString:
		if len(v) >= longString {
			p := unsafe.StringData(string(v))
			if _, ok := h.long[p]; ok {
				return
			}
			h.long[p] = struct{}{}
		}
		h.total += int64(len(v)) + 16
	case lua.LNumber:
		h.total += 8
	case *lua.LTable, *lua.LFunction, *lua.LUserData:
		if _, ok := h.seen[v]; ok {
			return
		}
		h.seen[v] = struct{}{}
		h.stack = append(h.stack, walkItem{v: v})
	}
}

// walk visits up to budget values (budget < 0: no limit). It returns true
// when the round is over: everything reachable was visited, or the total
// passed limit.
func (h *heapMeter) walk(budget int, limit int64) bool {
	for len(h.stack) > 0 {
		if h.total > limit {
			return true
		}
		it := h.stack[len(h.stack)-1]
		h.stack = h.stack[:len(h.stack)-1]
		switch v := it.v.(type) {
		case *lua.LTable:
			key := it.key
			if key == nil {
				h.total += tableBytes(v)
				h.visit(v.Metatable)
				key = lua.LNil
			}
			for {
				if budget == 0 {
					h.stack = append(h.stack, walkItem{v: v, key: key})
					return false
				}
				k, val := v.Next(key)
				if k == lua.LNil {
					break
				}
				budget--
				if !tableLayout.ok {
					h.total += 64
				}
				h.visit(k)
				h.visit(val)
				key = k
			}
		case *lua.LFunction:
			h.total += 64 + 56*int64(len(v.Upvalues))
			if v.Env != nil {
				h.visit(v.Env)
			}
			for _, uv := range v.Upvalues {
				if uv != nil {
					h.visit(uv.Value())
				}
			}
		case *lua.LUserData:
			h.total += 64
			h.visit(v.Metatable)
			if v.Env != nil {
				h.visit(v.Env)
			}
		}
		if budget > 0 {
			budget--
		}
		if budget == 0 && len(h.stack) > 0 {
			return false
		}
	}
	return true
}

// finish ends a round and reports whether the heap is over the cap.
func (h *heapMeter) finish(limit int64) (int64, bool) {
	h.active = false
	h.sinceEnd = 0
	h.estimate = h.total
	clear(h.stack)
	h.stack = h.stack[:0]
	clear(h.seen)
	clear(h.long)
	return h.total, h.total > limit
}

// measureAll runs a complete round now (Load, RestoreState).
func (h *heapMeter) measureAll(m *Module) (est int64, over bool) {
	defer h.survive(m)
	h.start(m)
	h.walk(-1, m.cfg.HeapCap)
	return h.finish(m.cfg.HeapCap)
}

// survive keeps a panic in the walk — it leans on gopher-lua's internals —
// from taking the server down: the round is abandoned and logged.
func (h *heapMeter) survive(m *Module) {
	if r := recover(); r != nil {
		h.finish(m.cfg.HeapCap)
		m.logger().Error("lua: heap measurement failed; round abandoned", "module", m.name(), "panic", r)
	}
}

// stepSlice advances the incremental measurement by one Step's slice and
// reports a fault when a round ends over the cap.
func (h *heapMeter) stepSlice(m *Module) {
	defer h.survive(m)
	if !h.active {
		if h.sinceEnd++; h.sinceEnd < heapRoundEvery {
			return
		}
		h.start(m)
	}
	if !h.walk(heapSliceValues, m.cfg.HeapCap) {
		return
	}
	if est, over := h.finish(m.cfg.HeapCap); over {
		m.host.Fault(m.heapFault("heap measurement", est))
	}
}

// HeapEstimate returns the module's Lua heap in bytes as last measured.
func (m *Module) HeapEstimate() int64 { return m.heap.estimate }
