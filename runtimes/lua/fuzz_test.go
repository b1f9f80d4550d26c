package lua

import (
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// FuzzPattern: no subject or pattern makes the matcher panic in Go; bad
// patterns are Lua errors.
func FuzzPattern(f *testing.F) {
	for _, seed := range [][2]string{
		{"hello world", "(%w+) (%w+)"}, {"x = (a(b)c)", "%b()"}, {"THE (quick) fox", "%f[%a]%a+"},
		{"abcabc", "(abc)%1"}, {"[]", "[]]"}, {"a-b", "[a%-]+"}, {"aaa", "a-b"}, {"", ""},
		{"a", "("}, {"a", "%"}, {"a", "[a"}, {"a", "%b"}, {"a", "%f"}, {"a", "(()"}, {"a", "%1"},
		{"aaaaaaaaaaaaaaaaaaaaaaaa", "a*a*a*a*a*b"}, {"\x00\xff", "[%z\xff]+"},
	} {
		f.Add(seed[0], seed[1], "%1-%0")
	}
	cfg := Config{}
	if err := cfg.populate(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, subject, pattern, repl string) {
		if len(subject) > 4096 || len(pattern) > 64 {
			return
		}
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()
		m := &Module{cfg: cfg}
		// Without a deadline a backtracking pattern may run for ages; the
		// deadline is what bounds it in a module too.
		m.budget.deadline = time.Now().Add(20 * time.Millisecond)
		for _, fn := range []lua.LGFunction{m.strFind, m.strMatch, m.strGsub, m.strGmatch} {
			L.Push(L.NewFunction(fn))
			L.Push(lua.LString(subject))
			L.Push(lua.LString(pattern))
			L.Push(lua.LString(repl))
			_ = L.PCall(3, lua.MultRet, nil) // a Lua error is fine; a Go panic is not
			L.SetTop(0)
		}
	})
}

// FuzzRestoreState: the state decoder never panics, whatever the bytes.
func FuzzRestoreState(f *testing.F) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	e := stateEncoder{b: []byte(stateMagic), onPath: make(map[*lua.LTable]bool)}
	t := L.NewTable()
	t.RawSetString("a", lua.LNumber(1))
	t.RawSetInt(1, lua.LString("x"))
	inner := L.NewTable()
	inner.RawSetString("deep", lua.LTrue)
	t.RawSetString("t", inner)
	if err := e.value(t, 0); err != nil {
		f.Fatal(err)
	}
	f.Add(e.b)
	f.Add([]byte(stateMagic + "n"))
	f.Add([]byte(stateMagic + "T\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := stateDecoder{L: L, b: b}
		v, err := d.decode()
		if err != nil {
			return
		}
		// What decodes re-encodes.
		e := stateEncoder{b: []byte(stateMagic), onPath: make(map[*lua.LTable]bool)}
		if err := e.value(v, 0); err != nil {
			t.Fatalf("decoded %v does not re-encode: %v", v, err)
		}
	})
}
