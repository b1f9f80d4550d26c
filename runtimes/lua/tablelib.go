package lua

import (
	"sort"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// tableConcat is table.concat with its result's size checked against
// MaxStringRep before it is built.
func (m *Module) tableConcat(L *lua.LState) int {
	const fn = "table.concat"
	t := L.CheckTable(1)
	sep := L.OptString(2, "")
	i := L.OptInt(3, 1)
	j := t.Len()
	if L.Get(4) != lua.LNil {
		j = L.CheckInt(4)
	}
	if i > j {
		L.Push(lua.LString(""))
		return 1
	}
	var parts []string
	total := 0
	for k := i; k <= j; k++ {
		v := t.RawGetInt(k)
		if !isPlain(v) {
			L.RaiseError("%s: invalid value (a %s) at index %d in table", fn, v.Type(), k)
		}
		s := v.String()
		total += len(s)
		if k < j {
			total += len(sep)
		}
		if total > m.cfg.MaxStringRep {
			m.build(L, fn, int64(total))
		}
		parts = append(parts, s)
	}
	m.build(L, fn, int64(total))
	L.Push(lua.LString(strings.Join(parts, sep)))
	return 1
}

// tableSort is table.sort on a copy of the array part 1..#t, written back
// when sorted. Comparing numbers and strings runs in Go, where the VM's
// deadline does not reach; the sorter looks at the clock every pollEvery
// comparisons instead.
func (m *Module) tableSort(L *lua.LState) int {
	t := L.CheckTable(1)
	s := &luaSorter{m: m, L: L}
	if v := L.Get(2); v != lua.LNil {
		s.cmp = L.CheckFunction(2)
	}
	n := t.Len()
	s.vals = make([]lua.LValue, n)
	for i := range s.vals {
		s.vals[i] = t.RawGetInt(i + 1)
	}
	sort.Sort(s)
	for i, v := range s.vals {
		t.RawSetInt(i+1, v)
	}
	return 0
}

type luaSorter struct {
	m     *Module
	L     *lua.LState
	cmp   *lua.LFunction
	vals  []lua.LValue
	count int
}

func (s *luaSorter) Len() int      { return len(s.vals) }
func (s *luaSorter) Swap(i, j int) { s.vals[i], s.vals[j] = s.vals[j], s.vals[i] }

func (s *luaSorter) Less(i, j int) bool {
	if s.count++; s.count%pollEvery == 0 {
		s.m.stopIfExpired(s.L, "table.sort")
	}
	if s.cmp == nil {
		return s.L.LessThan(s.vals[i], s.vals[j])
	}
	s.L.Push(s.cmp)
	s.L.Push(s.vals[i])
	s.L.Push(s.vals[j])
	s.L.Call(2, 1)
	r := lua.LVAsBool(s.L.Get(-1))
	s.L.Pop(1)
	return r
}
