package lua

import (
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The string builtins below replace gopher-lua's where a call could build
// an unbounded string: each computes the size of its result before it
// allocates and charges it to the call's budget (Module.build).

func (m *Module) concatFunction() *lua.LFunction { return m.L.NewFunction(m.luaConcat) }

func isPlain(v lua.LValue) bool {
	switch v.(type) {
	case lua.LString, lua.LNumber:
		return true
	}
	return false
}

// luaConcat is what every `..` in a script calls (see compileChunk): it
// joins its operands as OP_CONCAT would — strings and numbers directly,
// anything else through a __concat metamethod, right to left — but checks
// the size first.
func (m *Module) luaConcat(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	plain := true
	for i := 1; i <= n && plain; i++ {
		plain = isPlain(L.Get(i))
	}
	if plain {
		L.Push(m.joinPlain(L, 1, n, nil))
		return 1
	}
	rhs := L.Get(n)
	for i := n - 1; i >= 1; i-- {
		lhs := L.Get(i)
		if isPlain(lhs) && isPlain(rhs) {
			j := i
			for j > 1 && isPlain(L.Get(j-1)) {
				j--
			}
			rhs = m.joinPlain(L, j, i, rhs)
			i = j
			continue
		}
		mm := L.GetMetaField(lhs, "__concat")
		if mm == lua.LNil {
			mm = L.GetMetaField(rhs, "__concat")
		}
		fn, ok := mm.(*lua.LFunction)
		if !ok {
			bad := lhs
			if isPlain(lhs) {
				bad = rhs
			}
			L.RaiseError("attempt to concatenate a %s value", bad.Type())
		}
		L.Push(fn)
		L.Push(lhs)
		L.Push(rhs)
		L.Call(2, 1)
		rhs = L.Get(-1)
		L.Pop(1)
	}
	L.Push(rhs)
	return 1
}

// joinPlain joins the stack values from..to (strings or numbers) and then
// tail, if not nil.
func (m *Module) joinPlain(L *lua.LState, from, to int, tail lua.LValue) lua.LString {
	var small [8]string
	parts := small[:0]
	total := 0
	for i := from; i <= to; i++ {
		s := L.Get(i).String()
		total += len(s)
		parts = append(parts, s)
	}
	if tail != nil {
		s := tail.String()
		total += len(s)
		parts = append(parts, s)
	}
	m.build(L, "..", int64(total))
	var b strings.Builder
	b.Grow(total)
	for _, s := range parts {
		b.WriteString(s)
	}
	return lua.LString(b.String())
}

func (m *Module) strRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := math.Trunc(float64(L.CheckNumber(2)))
	sep := L.OptString(3, "")
	if !(n >= 1) || len(s)+len(sep) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	size := float64(len(s))*n + float64(len(sep))*(n-1)
	if size > float64(m.cfg.MaxStringRep) {
		L.RaiseError("string.rep: result would be %.0f bytes, more than the limit of %d", size, m.cfg.MaxStringRep)
	}
	m.build(L, "string.rep", int64(size))
	if sep == "" {
		L.Push(lua.LString(strings.Repeat(s, int(n))))
		return 1
	}
	var b strings.Builder
	b.Grow(int(size))
	for i := 0; i < int(n); i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s)
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// strUpper, strLower and strReverse work byte by byte, as C Lua does
// (gopher-lua's upper/lower are Unicode-aware and can grow a string three
// times over on invalid UTF-8).
func (m *Module) strUpper(L *lua.LState) int {
	return m.mapBytes(L, "string.upper", func(c byte) byte {
		if 'a' <= c && c <= 'z' {
			return c - 'a' + 'A'
		}
		return c
	})
}

func (m *Module) strLower(L *lua.LState) int {
	return m.mapBytes(L, "string.lower", func(c byte) byte {
		if 'A' <= c && c <= 'Z' {
			return c - 'A' + 'a'
		}
		return c
	})
}

func (m *Module) mapBytes(L *lua.LState, fn string, f func(byte) byte) int {
	s := L.CheckString(1)
	m.build(L, fn, int64(len(s)))
	b := []byte(s)
	for i, c := range b {
		b[i] = f(c)
	}
	L.Push(lua.LString(b))
	return 1
}

func (m *Module) strReverse(L *lua.LState) int {
	s := L.CheckString(1)
	m.build(L, "string.reverse", int64(len(s)))
	b := make([]byte, len(s))
	for i := range len(s) {
		b[len(s)-1-i] = s[i]
	}
	L.Push(lua.LString(b))
	return 1
}

// strFormat is Lua 5.1's string.format: flags "-+ #0", a width and a
// precision of at most two digits each, conversions c d i o u x X e E f g G
// q s and %%. Each conversion's output is bounded by its two-digit width
// and precision (and, for %s and %q, by its argument), and the growing
// result is checked against MaxStringRep after each one.
func (m *Module) strFormat(L *lua.LState) int {
	const fn = "string.format"
	f := L.CheckString(1)
	top := L.GetTop()
	arg := 1
	b := make([]byte, 0, len(f)+16)
	for i := 0; i < len(f); {
		if f[i] != '%' {
			j := strings.IndexByte(f[i:], '%')
			if j < 0 {
				j = len(f) - i
			}
			b = append(b, f[i:i+j]...)
			i += j
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			b = append(b, '%')
			i++
			continue
		}
		spec, conv, next := parseSpec(L, f, i)
		i = next
		arg++
		if arg > top {
			L.ArgError(arg, "no value")
		}
		b = m.formatOne(L, b, spec, conv, arg)
		if len(b) > m.cfg.MaxStringRep {
			m.build(L, fn, int64(len(b)))
		}
	}
	m.build(L, fn, int64(len(b)))
	L.Push(lua.LString(b))
	return 1
}

type formatSpec struct {
	flags, width, prec string
	hasPrec            bool
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func parseSpec(L *lua.LState, f string, i int) (formatSpec, byte, int) {
	var s formatSpec
	start := i
	for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
		i++
	}
	if i-start > 5 {
		L.RaiseError("string.format: invalid format (repeated flags)")
	}
	s.flags = f[start:i]
	w := i
	for i < len(f) && isDigit(f[i]) {
		i++
	}
	s.width = f[w:i]
	if i < len(f) && f[i] == '.' {
		i++
		p := i
		for i < len(f) && isDigit(f[i]) {
			i++
		}
		s.prec, s.hasPrec = f[p:i], true
	}
	if len(s.width) > 2 || len(s.prec) > 2 {
		L.RaiseError("string.format: invalid format (width or precision too long)")
	}
	if i >= len(f) {
		L.RaiseError("string.format: invalid conversion '%%%s' at the end of the format", f[start:])
	}
	return s, f[i], i + 1
}

func (s formatSpec) verb(v byte) string {
	p := ""
	if s.hasPrec {
		p = "." + s.prec
	}
	return "%" + s.flags + s.width + p + string(v)
}

func (m *Module) formatOne(L *lua.LState, b []byte, s formatSpec, conv byte, arg int) []byte {
	switch conv {
	case 'c':
		return pad(b, s, string([]byte{byte(int64(L.CheckNumber(arg)))}))
	case 'd', 'i':
		return fmt.Appendf(b, s.verb('d'), int64(L.CheckNumber(arg)))
	case 'u':
		return fmt.Appendf(b, s.verb('d'), uint64(int64(L.CheckNumber(arg))))
	case 'o', 'x', 'X':
		return fmt.Appendf(b, s.verb(conv), uint64(int64(L.CheckNumber(arg))))
	case 'e', 'E', 'f', 'g', 'G':
		x := float64(L.CheckNumber(arg))
		if math.IsInf(x, 0) || math.IsNaN(x) {
			t := "nan"
			switch {
			case math.IsInf(x, 1):
				t = "inf"
			case math.IsInf(x, -1):
				t = "-inf"
			}
			if conv == 'E' || conv == 'G' {
				t = strings.ToUpper(t)
			}
			return pad(b, s, t)
		}
		if !s.hasPrec {
			// C's default precision; Go's %g would print the shortest form.
			s.prec, s.hasPrec = "6", true
		}
		return fmt.Appendf(b, s.verb(conv), x)
	case 'q':
		return appendQuoted(b, L.CheckString(arg))
	case 's':
		str := L.ToStringMeta(L.Get(arg)).String()
		if s.hasPrec {
			n := 0
			for _, c := range s.prec {
				n = n*10 + int(c-'0')
			}
			if n < len(str) {
				str = str[:n]
			}
		}
		return pad(b, s, str)
	}
	L.RaiseError("string.format: invalid conversion '%%%c' in the format", conv)
	return b
}

// pad appends str padded to the spec's width in bytes, as C does.
func pad(b []byte, s formatSpec, str string) []byte {
	w := 0
	for _, c := range s.width {
		w = w*10 + int(c-'0')
	}
	fill := w - len(str)
	left := strings.IndexByte(s.flags, '-') >= 0
	if !left {
		for ; fill > 0; fill-- {
			b = append(b, ' ')
		}
	}
	b = append(b, str...)
	for ; fill > 0; fill-- {
		b = append(b, ' ')
	}
	return b
}

// appendQuoted is Lua 5.1's %q.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b = append(b, '\\', c)
		case '\r':
			b = append(b, '\\', 'r')
		case 0:
			b = append(b, '\\', '0', '0', '0')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
