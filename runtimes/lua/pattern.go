package lua

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua patterns, ported from Lua 5.1's lstrlib.c (match, max_expand,
// min_expand, captures, %b, %f), because gopher-lua's matcher can neither be
// stopped nor bounded: it backtracks in Go, recursing once per subject byte
// (up to a million deep), and a pattern such as "a*a*a*a*b" costs a power of
// the subject's length. This one
//
//   - refuses subjects over MaxPatternSubject and patterns over 4 KiB;
//   - recurses only per pattern item (captures, ?, *, -), at most 200 deep;
//   - counts its steps and looks at the call's deadline every pollEvery
//     steps, raising the budget error when it has passed.
//
// Semantics are 5.1's, with two 5.2 refinements: a pattern may contain "\0"
// as a plain byte, and a lone '%' at the end of a gsub replacement is an
// error instead of a NUL.

const (
	maxCaptures    = 32
	capUnfinished  = -1
	capPosition    = -2
	maxMatchDepth  = 200
	maxPatternLen  = 4 << 10
	patternSpecial = "^$*+?.([%-"
)

type capture struct{ init, len int }

type matchState struct {
	m       *Module
	L       *lua.LState
	fn      string // the builtin, for messages
	src     string
	pat     string
	level   int
	depth   int
	steps   int
	capture [maxCaptures]capture
}

func (m *Module) newMatch(L *lua.LState, fn, src, pat string) *matchState {
	if len(src) > m.cfg.MaxPatternSubject {
		L.RaiseError("%s: subject is %d bytes, more than the limit of %d", fn, len(src), m.cfg.MaxPatternSubject)
	}
	if len(pat) > maxPatternLen {
		L.RaiseError("%s: pattern is %d bytes, more than the limit of %d", fn, len(pat), maxPatternLen)
	}
	return &matchState{m: m, L: L, fn: fn, src: src, pat: pat}
}

func (ms *matchState) fail(format string, args ...any) {
	ms.L.RaiseError(ms.fn+": "+format, args...)
}

func (ms *matchState) tick(n int) {
	before := ms.steps
	ms.steps += n
	if before/pollEvery != ms.steps/pollEvery {
		ms.m.stopIfExpired(ms.L, ms.fn)
	}
}

// reset prepares a match attempt at a new start position.
func (ms *matchState) reset() { ms.level, ms.depth = 0, 0 }

// match returns the end of the match of pat[p:] at src[s:], or -1.
func (ms *matchState) match(s, p int) int {
	ms.depth++
	if ms.depth > maxMatchDepth {
		ms.fail("pattern too complex (nested more than %d levels)", maxMatchDepth)
	}
	r := ms.doMatch(s, p)
	ms.depth--
	return r
}

func (ms *matchState) doMatch(s, p int) int {
	src, pat := ms.src, ms.pat
	for {
		ms.tick(1)
		if p == len(pat) {
			return s
		}
		switch pat[p] {
		case '(':
			if p+1 < len(pat) && pat[p+1] == ')' {
				return ms.startCapture(s, p+2, capPosition)
			}
			return ms.startCapture(s, p+1, capUnfinished)
		case ')':
			return ms.endCapture(s, p+1)
		case '$':
			if p+1 == len(pat) {
				if s == len(src) {
					return s
				}
				return -1
			}
		case '%':
			if p+1 < len(pat) {
				switch c := pat[p+1]; {
				case c == 'b':
					if s = ms.matchBalance(s, p+2); s == -1 {
						return -1
					}
					p += 4
					continue
				case c == 'f':
					p += 2
					if p >= len(pat) || pat[p] != '[' {
						ms.fail("missing '[' after '%%f' in pattern")
					}
					ep := ms.classEnd(p)
					var prev, cur byte
					if s > 0 {
						prev = src[s-1]
					}
					if s < len(src) {
						cur = src[s]
					}
					if ms.matchBracketClass(prev, p, ep-1) || !ms.matchBracketClass(cur, p, ep-1) {
						return -1
					}
					p = ep
					continue
				case isDigit(c):
					if s = ms.matchCapture(s, c); s == -1 {
						return -1
					}
					p += 2
					continue
				}
			}
		}
		// A single-character class, possibly followed by a quantifier.
		ep := ms.classEnd(p)
		m := s < len(src) && ms.singleMatch(src[s], p, ep)
		if ep < len(pat) {
			switch pat[ep] {
			case '?':
				if m {
					if r := ms.match(s+1, ep+1); r != -1 {
						return r
					}
				}
				p = ep + 1
				continue
			case '*':
				return ms.maxExpand(s, p, ep)
			case '+':
				if m {
					return ms.maxExpand(s+1, p, ep)
				}
				return -1
			case '-':
				return ms.minExpand(s, p, ep)
			}
		}
		if !m {
			return -1
		}
		s++
		p = ep
	}
}

func (ms *matchState) maxExpand(s, p, ep int) int {
	i := 0
	for s+i < len(ms.src) && ms.singleMatch(ms.src[s+i], p, ep) {
		i++
	}
	ms.tick(i)
	for ; i >= 0; i-- {
		if r := ms.match(s+i, ep+1); r != -1 {
			return r
		}
	}
	return -1
}

func (ms *matchState) minExpand(s, p, ep int) int {
	for {
		if r := ms.match(s, ep+1); r != -1 {
			return r
		}
		if s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep) {
			s++
		} else {
			return -1
		}
	}
}

func (ms *matchState) startCapture(s, p, what int) int {
	if ms.level >= maxCaptures {
		ms.fail("too many captures")
	}
	ms.capture[ms.level] = capture{init: s, len: what}
	ms.level++
	r := ms.match(s, p)
	if r == -1 {
		ms.level--
	}
	return r
}

func (ms *matchState) endCapture(s, p int) int {
	l := -1
	for i := ms.level - 1; i >= 0; i-- {
		if ms.capture[i].len == capUnfinished {
			l = i
			break
		}
	}
	if l < 0 {
		ms.fail("invalid pattern capture")
	}
	ms.capture[l].len = s - ms.capture[l].init
	r := ms.match(s, p)
	if r == -1 {
		ms.capture[l].len = capUnfinished
	}
	return r
}

func (ms *matchState) matchCapture(s int, c byte) int {
	l := int(c - '1')
	if l < 0 || l >= ms.level || ms.capture[l].len == capUnfinished {
		ms.fail("invalid capture index %%%c", c)
	}
	cp := ms.capture[l]
	if cp.len < 0 || len(ms.src)-s < cp.len {
		return -1
	}
	ms.tick(cp.len)
	if ms.src[cp.init:cp.init+cp.len] == ms.src[s:s+cp.len] {
		return s + cp.len
	}
	return -1
}

func (ms *matchState) matchBalance(s, p int) int {
	if p+1 >= len(ms.pat) {
		ms.fail("malformed pattern (missing arguments to '%%b')")
	}
	if s >= len(ms.src) || ms.src[s] != ms.pat[p] {
		return -1
	}
	open, close := ms.pat[p], ms.pat[p+1]
	depth := 1
	start := s
	for s++; s < len(ms.src); s++ {
		switch ms.src[s] {
		case close:
			if depth--; depth == 0 {
				ms.tick(s - start)
				return s + 1
			}
		case open:
			depth++
		}
	}
	ms.tick(s - start)
	return -1
}

// classEnd returns the index just past the single-character class at p.
func (ms *matchState) classEnd(p int) int {
	pat := ms.pat
	c := pat[p]
	p++
	switch c {
	case '%':
		if p >= len(pat) {
			ms.fail("malformed pattern (ends with '%%')")
		}
		return p + 1
	case '[':
		if p < len(pat) && pat[p] == '^' {
			p++
		}
		for {
			if p >= len(pat) {
				ms.fail("malformed pattern (missing ']')")
			}
			cc := pat[p]
			p++
			if cc == '%' && p < len(pat) {
				p++
			}
			if p >= len(pat) {
				ms.fail("malformed pattern (missing ']')")
			}
			if pat[p] == ']' {
				return p + 1
			}
		}
	}
	return p
}

func (ms *matchState) singleMatch(c byte, p, ep int) bool {
	switch ms.pat[p] {
	case '.':
		return true
	case '%':
		return matchClass(c, ms.pat[p+1])
	case '[':
		return ms.matchBracketClass(c, p, ep-1)
	}
	return ms.pat[p] == c
}

// matchBracketClass matches c against the set pat[p] == '[' … pat[ec] == ']'.
func (ms *matchState) matchBracketClass(c byte, p, ec int) bool {
	pat := ms.pat
	sig := true
	if pat[p+1] == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case pat[p] == '%':
			p++
			if matchClass(c, pat[p]) {
				return sig
			}
		case pat[p+1] == '-' && p+2 < ec:
			p += 2
			if pat[p-2] <= c && c <= pat[p] {
				return sig
			}
		case pat[p] == c:
			return sig
		}
	}
	return !sig
}

func matchClass(c, cl byte) bool {
	lower := cl
	if 'A' <= cl && cl <= 'Z' {
		lower = cl - 'A' + 'a'
	}
	var res bool
	switch lower {
	case 'a':
		res = isAlpha(c)
	case 'c':
		res = c < 32 || c == 127
	case 'd':
		res = isDigit(c)
	case 'l':
		res = 'a' <= c && c <= 'z'
	case 'p':
		res = c >= 33 && c <= 126 && !isAlpha(c) && !isDigit(c)
	case 's':
		res = c == ' ' || ('\t' <= c && c <= '\r')
	case 'u':
		res = 'A' <= c && c <= 'Z'
	case 'w':
		res = isAlpha(c) || isDigit(c)
	case 'x':
		res = isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if 'A' <= cl && cl <= 'Z' {
		return !res
	}
	return res
}

func isAlpha(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

// captureValue is capture i of a match of src[s:e]; capture 0 of a pattern
// without captures is the whole match.
func (ms *matchState) captureValue(i, s, e int) lua.LValue {
	if i >= ms.level {
		if i != 0 {
			ms.fail("invalid capture index %%%d", i+1)
		}
		return lua.LString(ms.src[s:e])
	}
	c := ms.capture[i]
	switch c.len {
	case capUnfinished:
		ms.fail("unfinished capture")
	case capPosition:
		return lua.LNumber(c.init + 1)
	}
	return lua.LString(ms.src[c.init : c.init+c.len])
}

// pushCaptures pushes the captures (or, with whole, the match itself when
// there are none) and returns how many.
func (ms *matchState) pushCaptures(s, e int, whole bool) int {
	n := ms.level
	if n == 0 && whole {
		n = 1
	}
	for i := range n {
		ms.L.Push(ms.captureValue(i, s, e))
	}
	return n
}

func posRelative(pos, n int) int {
	if pos < 0 {
		pos += n + 1
	}
	return max(pos, 0)
}

func (m *Module) strFind(L *lua.LState) int  { return m.findAux(L, true) }
func (m *Module) strMatch(L *lua.LState) int { return m.findAux(L, false) }

func (m *Module) findAux(L *lua.LState, find bool) int {
	fn := "string.match"
	if find {
		fn = "string.find"
	}
	s := L.CheckString(1)
	p := L.CheckString(2)
	init := min(posRelative(L.OptInt(3, 1), len(s))-1, len(s))
	init = max(init, 0)
	if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(p, patternSpecial)) {
		if i := strings.Index(s[init:], p); i >= 0 {
			L.Push(lua.LNumber(init + i + 1))
			L.Push(lua.LNumber(init + i + len(p)))
			return 2
		}
		L.Push(lua.LNil)
		return 1
	}
	anchor := strings.HasPrefix(p, "^")
	if anchor {
		p = p[1:]
	}
	ms := m.newMatch(L, fn, s, p)
	for s1 := init; s1 <= len(s); s1++ {
		ms.reset()
		if e := ms.match(s1, 0); e != -1 {
			if find {
				L.Push(lua.LNumber(s1 + 1))
				L.Push(lua.LNumber(e))
				return ms.pushCaptures(-1, -1, false) + 2
			}
			return ms.pushCaptures(s1, e, true)
		}
		if anchor {
			break
		}
	}
	L.Push(lua.LNil)
	return 1
}

func (m *Module) strGmatch(L *lua.LState) int {
	s := L.CheckString(1)
	p := L.CheckString(2)
	ms := m.newMatch(L, "string.gmatch", s, p)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		ms.L = L
		for src := pos; src <= len(s); src++ {
			ms.reset()
			if e := ms.match(src, 0); e != -1 {
				pos = e
				if e == src {
					pos++
				}
				return ms.pushCaptures(src, e, true)
			}
		}
		pos = len(s) + 1
		return 0
	}))
	return 1
}

func (m *Module) strGsub(L *lua.LState) int {
	const fn = "string.gsub"
	src := L.CheckString(1)
	p := L.CheckString(2)
	repl := L.Get(3)
	switch repl.(type) {
	case lua.LString, lua.LNumber, *lua.LTable, *lua.LFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	maxN := L.OptInt(4, len(src)+1)
	anchor := strings.HasPrefix(p, "^")
	if anchor {
		p = p[1:]
	}
	ms := m.newMatch(L, fn, src, p)
	limit := m.cfg.MaxStringRep
	var b []byte
	n, s := 0, 0
	for n < maxN {
		ms.reset()
		e := ms.match(s, 0)
		if e != -1 {
			n++
			b = ms.addValue(b, s, e, repl)
		}
		switch {
		case e != -1 && e > s:
			s = e
		case s < len(src):
			b = append(b, src[s])
			s++
		default:
			goto done
		}
		if len(b) > limit {
			m.build(L, fn, int64(len(b)))
		}
		if anchor {
			break
		}
	}
done:
	b = append(b, src[s:]...)
	m.build(L, fn, int64(len(b)))
	L.Push(lua.LString(b))
	L.Push(lua.LNumber(n))
	return 2
}

// addValue appends the replacement of the match src[s:e].
func (ms *matchState) addValue(b []byte, s, e int, repl lua.LValue) []byte {
	L := ms.L
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString, lua.LNumber:
		return ms.addString(b, s, e, r.String())
	case *lua.LFunction:
		L.Push(r)
		n := ms.pushCaptures(s, e, true)
		L.Call(n, 1)
		v = L.Get(-1)
		L.Pop(1)
	case *lua.LTable:
		v = L.GetTable(r, ms.captureValue(0, s, e))
	}
	if !lua.LVAsBool(v) {
		return append(b, ms.src[s:e]...)
	}
	if !isPlain(v) {
		ms.fail("invalid replacement value (a %s)", v.Type())
	}
	return append(b, v.String()...)
}

// addString appends a replacement string with %0..%9 expanded.
func (ms *matchState) addString(b []byte, s, e int, news string) []byte {
	for i := 0; i < len(news); i++ {
		c := news[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		i++
		if i >= len(news) {
			ms.fail("invalid use of '%%' at the end of the replacement string")
		}
		switch d := news[i]; {
		case !isDigit(d):
			b = append(b, d)
		case d == '0':
			b = append(b, ms.src[s:e]...)
		default:
			b = append(b, ms.captureValue(int(d-'1'), s, e).String()...)
		}
		if len(b) > ms.m.cfg.MaxStringRep {
			ms.m.build(ms.L, ms.fn, int64(len(b)))
		}
	}
	return b
}
