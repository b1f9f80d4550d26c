package lua

import (
	"context"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// gopher-lua stores t[k] for every integer 1 ≤ k < MaxArrayIndex in the
// table's array part and fills the gap up to k with nils, in Go, in one VM
// instruction: with the library's default (64 Mi) a single `t[6e7] = 1`
// allocates a gigabyte before the deadline can stop anything. At 1 Mi the
// worst single assignment is 16 MiB; larger keys go to the hash part. An
// array of a million elements is already over the default heap cap, so no
// module within its cap notices (except that `#t` counts the array part
// only). The variable is global to gopher-lua; this package is its only
// user in the binary.
const maxArrayIndex = 1 << 20

func init() { lua.MaxArrayIndex = maxArrayIndex }

// forbiddenGlobals are the base functions a module does not get: loading
// code (dofile, loadfile, load, loadstring, require, module), reaching
// around the sandbox (getfenv, setfenv, newproxy), the collector
// (collectgarbage), and gopher-lua's stdout debugging helper.
var forbiddenGlobals = []string{
	"dofile", "loadfile", "load", "loadstring", "require", "module",
	"getfenv", "setfenv", "collectgarbage", "newproxy", "_printregs",
}

// maxDateFormat bounds os.date's format: its output grows with it.
const maxDateFormat = 256

// openSandbox opens what a module gets: base (without forbiddenGlobals,
// print going to the module log), table, string, math, and os.time,
// os.clock and os.date. No io, os.execute, debug, package, coroutine or
// channel. Builtins that can run away in Go are replaced by bounded ones.
func (m *Module) openSandbox() {
	L := m.L
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.OsLibName, lua.OpenOs},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	G := L.G.Global
	for _, name := range forbiddenGlobals {
		G.RawSetString(name, lua.LNil)
	}
	G.RawSetString("print", L.NewFunction(m.luaPrint))

	loaded, _ := L.G.Registry.RawGetString("_LOADED").(*lua.LTable)
	fullOS, _ := G.RawGetString("os").(*lua.LTable)
	osTable := L.NewTable()
	if fullOS != nil {
		osTable.RawSetString("time", fullOS.RawGetString("time"))
		osTable.RawSetString("clock", fullOS.RawGetString("clock"))
		if date, ok := fullOS.RawGetString("date").(*lua.LFunction); ok {
			osTable.RawSetString("date", L.NewFunction(boundedDate(date)))
		}
	}
	G.RawSetString("os", osTable)
	if loaded != nil {
		loaded.RawSetString("os", osTable)
	}

	str, _ := G.RawGetString("string").(*lua.LTable)
	for name, fn := range map[string]lua.LGFunction{
		"rep": m.strRep, "format": m.strFormat, "upper": m.strUpper, "lower": m.strLower,
		"reverse": m.strReverse, "find": m.strFind, "match": m.strMatch, "gmatch": m.strGmatch,
		"gsub": m.strGsub,
	} {
		str.RawSetString(name, L.NewFunction(fn))
	}
	str.RawSetString("dump", lua.LNil)
	str.RawSetString("gfind", lua.LNil)

	tab, _ := G.RawGetString("table").(*lua.LTable)
	tab.RawSetString("concat", L.NewFunction(m.tableConcat))
	tab.RawSetString("sort", L.NewFunction(m.tableSort))

	mth, _ := G.RawGetString("math").(*lua.LTable)
	mth.RawSetString("random", L.NewFunction(m.mathRandom))
	mth.RawSetString("randomseed", L.NewFunction(m.mathRandomseed))
}

func boundedDate(date *lua.LFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		if s, ok := L.Get(1).(lua.LString); ok && len(s) > maxDateFormat {
			L.RaiseError("os.date: format is %d bytes, more than the limit of %d", len(s), maxDateFormat)
		}
		return date.GFunction(L)
	}
}

// mathRandom is math.random on the module's own generator.
func (m *Module) mathRandom(L *lua.LState) int {
	const limit = 1 << 53
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(m.rng.Float64()))
	case 1:
		hi := math.Floor(float64(L.CheckNumber(1)))
		if hi < 1 || hi > limit {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(m.rng.Int64N(int64(hi)) + 1))
	default:
		lo := math.Floor(float64(L.CheckNumber(1)))
		hi := math.Floor(float64(L.CheckNumber(2)))
		if lo > hi || lo < -limit || hi > limit {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(float64(m.rng.Int64N(int64(hi-lo)+1)) + lo))
	}
	return 1
}

// mathRandomseed reseeds the module's generator; it never touches another
// module's or the process's.
func (m *Module) mathRandomseed(L *lua.LState) int {
	x := float64(L.CheckNumber(1))
	seed := uint64(int64(x))
	if x != math.Trunc(x) {
		seed = math.Float64bits(x)
	}
	m.rng = mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return 0
}

// maxLogLine bounds one log record's message in bytes.
const maxLogLine = 4 << 10

func (m *Module) luaPrint(L *lua.LState) int {
	m.logArgs(L, slog.LevelInfo)
	return 0
}

// logArgs logs the call's arguments, converted like tostring and joined by
// spaces, at level. Past maxLogLinesPerCall records in one Step or command
// the rest are counted and dropped.
func (m *Module) logArgs(L *lua.LState, level slog.Level) {
	if m.budget.logLines >= maxLogLinesPerCall {
		m.budget.logDropped++
		return
	}
	m.budget.logLines++
	var b strings.Builder
	for i := 1; i <= L.GetTop(); i++ {
		if i > 1 {
			b.WriteByte(' ')
		}
		b.WriteString(L.ToStringMeta(L.Get(i)).String())
		if b.Len() > maxLogLine {
			break
		}
	}
	msg := b.String()
	if len(msg) > maxLogLine {
		msg = msg[:maxLogLine] + "…"
	}
	m.logger().Log(context.Background(), level, msg)
}
