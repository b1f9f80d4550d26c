package lua

import (
	"fmt"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// args checks the arguments of a binding and raises errors that name the
// function and the argument:
//
//	spark.send: argument #2 (type) must be a registered message id, got 5
//
// For a method (reader:u8, writer:str), self is 1: argument numbers are
// shown as the script wrote them, without the receiver.
type args struct {
	L    *lua.LState
	fn   string
	self int
}

// fail raises "fn: argument #n (name) must be want, got <value>".
func (a args) fail(n int, name, want string) {
	a.L.RaiseError("%s: argument #%d (%s) must be %s, got %s", a.fn, n-a.self, name, want, describe(a.L.Get(n)))
}

// describe renders a value for an error message: numbers and booleans as
// themselves, strings quoted (and cut), other values by their type.
func describe(v lua.LValue) string {
	switch v := v.(type) {
	case lua.LNumber:
		return v.String()
	case lua.LBool:
		return v.String()
	case lua.LString:
		s := string(v)
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return strconv.Quote(s)
	case *lua.LNilType:
		return "nil"
	}
	return "a " + v.Type().String()
}

func isInteger(x float64) bool { return x == math.Trunc(x) && !math.IsInf(x, 0) }

func (a args) integer(n int, name string, lo, hi int64) int64 {
	v, ok := a.L.Get(n).(lua.LNumber)
	if !ok || !isInteger(float64(v)) || float64(v) < float64(lo) || float64(v) > float64(hi) {
		a.fail(n, name, fmt.Sprintf("an integer in %d..%d", lo, hi))
	}
	return int64(v)
}

// optInteger is integer, or def when the argument is nil or absent.
func (a args) optInteger(n int, name string, lo, hi, def int64) int64 {
	if a.L.Get(n) == lua.LNil {
		return def
	}
	return a.integer(n, name, lo, hi)
}

func (a args) client(n int) uint32 {
	return uint32(a.integer(n, "client", 0, math.MaxUint32))
}

func (a args) number(n int, name string) float64 {
	v, ok := a.L.Get(n).(lua.LNumber)
	if !ok {
		a.fail(n, name, "a number")
	}
	return float64(v)
}

func (a args) str(n int, name string) string {
	v, ok := a.L.Get(n).(lua.LString)
	if !ok {
		a.fail(n, name, "a string")
	}
	return string(v)
}

func (a args) optStr(n int, name, def string) string {
	if a.L.Get(n) == lua.LNil {
		return def
	}
	return a.str(n, name)
}

func (a args) function(n int, name string) *lua.LFunction {
	f, ok := a.L.Get(n).(*lua.LFunction)
	if !ok {
		a.fail(n, name, "a function")
	}
	return f
}

// optFunction is a function, or nil for nil (a hook being cleared).
func (a args) optFunction(n int, name string) *lua.LFunction {
	if a.L.Get(n) == lua.LNil {
		return nil
	}
	f, ok := a.L.Get(n).(*lua.LFunction)
	if !ok {
		a.fail(n, name, "a function or nil")
	}
	return f
}

func (a args) table(n int, name string) *lua.LTable {
	t, ok := a.L.Get(n).(*lua.LTable)
	if !ok {
		a.fail(n, name, "a table")
	}
	return t
}

// fields checks the fields of a declaration table such as spark.message's:
// fail names the function and the field.
type fields struct {
	L  *lua.LState
	fn string
	t  *lua.LTable
}

func (f fields) fail(field, want string) {
	f.L.RaiseError("%s: field '%s' must be %s, got %s", f.fn, field, want, describe(f.t.RawGetString(field)))
}

// only raises for a field not in known: a misspelt field is an error, not a
// silently ignored default.
func (f fields) only(known ...string) {
	var bad string
	f.t.ForEach(func(k, _ lua.LValue) {
		ks, ok := k.(lua.LString)
		if !ok {
			bad = k.String()
			return
		}
		for _, name := range known {
			if string(ks) == name {
				return
			}
		}
		if bad == "" {
			bad = string(ks)
		}
	})
	if bad != "" {
		f.L.RaiseError("%s: unknown field '%s' (fields are %v)", f.fn, bad, known)
	}
}

func (f fields) has(field string) bool { return f.t.RawGetString(field) != lua.LNil }

func (f fields) str(field string) string {
	v, ok := f.t.RawGetString(field).(lua.LString)
	if !ok {
		f.fail(field, "a string")
	}
	return string(v)
}

func (f fields) integer(field string, lo, hi int64) int64 {
	v, ok := f.t.RawGetString(field).(lua.LNumber)
	if !ok || !isInteger(float64(v)) || float64(v) < float64(lo) || float64(v) > float64(hi) {
		f.fail(field, fmt.Sprintf("an integer in %d..%d", lo, hi))
	}
	return int64(v)
}

func (f fields) boolean(field string, def bool) bool {
	switch v := f.t.RawGetString(field).(type) {
	case *lua.LNilType:
		return def
	case lua.LBool:
		return bool(v)
	}
	f.fail(field, "true or false")
	return false
}
