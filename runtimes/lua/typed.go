package lua

import (
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Typed message declarations in Lua (docs/lua-modules.md "Typed messages"):
//
//	fields = {
//	  {"name", "str", 32},            -- name, type, max bytes (str, bytes)
//	  {"hp", "u16"},                  -- u8 u16 u32 i32 f32 vec3: no max
//	  {"ids", "array", 16, "u32"},    -- array: max count, element type
//	  {"tags", "array", 8, "str", 16} -- ...and the element's max bytes
//	}

// fieldsUsage is the shape a declaration's error messages show.
const fieldsUsage = `a list of fields like {"name", "str", 32}, {"hp", "u16"} or {"ids", "array", 16, "u32"}`

// luaFields reads the fields list of a spark.message declaration.
func luaFields(L *lua.LState, fn string, v lua.LValue) []wire.Field {
	t, ok := v.(*lua.LTable)
	if !ok || t.Len() == 0 {
		L.RaiseError("%s: field 'fields' must be %s, got %s", fn, fieldsUsage, describe(v))
	}
	n := t.Len()
	if n > wire.MaxFields {
		L.RaiseError("%s: field 'fields' lists %d fields; a message may declare at most %d", fn, n, wire.MaxFields)
	}
	out := make([]wire.Field, n)
	for i := range n {
		f, err := luaField(t.RawGetInt(i + 1))
		if err != nil {
			L.RaiseError("%s: fields[%d]: %v", fn, i+1, err)
		}
		out[i] = f
	}
	return out
}

// luaField reads one {name, type, ...} entry.
func luaField(v lua.LValue) (wire.Field, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return wire.Field{}, fmt.Errorf("must be a table like {\"name\", \"str\", 32}, got %s", describe(v))
	}
	name, ok := t.RawGetInt(1).(lua.LString)
	if !ok || !wire.ValidFieldName(string(name)) {
		return wire.Field{}, fmt.Errorf("entry 1 (name) must be an identifier of 1..%d bytes (letters, digits, '_'), got %s", wire.MaxFieldNameLen, describe(t.RawGetInt(1)))
	}
	f := wire.Field{Name: string(name)}
	kind, err := luaKind(t.RawGetInt(2), 2, true)
	if err != nil {
		return f, err
	}
	f.Kind = kind
	switch {
	case kind == wire.KindArray:
		if f.Max, err = luaMax(t.RawGetInt(3), 3, "max count"); err != nil {
			return f, err
		}
		if f.Elem, err = luaKind(t.RawGetInt(4), 4, false); err != nil {
			return f, err
		}
		if f.Elem.HasMax() {
			f.ElemMax, err = luaMax(t.RawGetInt(5), 5, "element's max bytes")
		} else if t.Len() > 4 {
			err = fmt.Errorf("an array of %s takes no element max", f.Elem)
		}
	case kind.HasMax():
		f.Max, err = luaMax(t.RawGetInt(3), 3, "max bytes")
	case t.Len() > 2:
		err = fmt.Errorf("a %s takes no max", kind)
	}
	return f, err
}

func luaKind(v lua.LValue, entry int, arrays bool) (wire.Kind, error) {
	s, _ := v.(lua.LString)
	k, ok := wire.ParseKind(string(s))
	if !ok || (!arrays && k == wire.KindArray) {
		want := `"u8", "u16", "u32", "i32", "f32", "vec3", "str", "bytes"`
		if arrays {
			want += ` or "array"`
		}
		return 0, fmt.Errorf("entry %d (type) must be %s, got %s", entry, want, describe(v))
	}
	return k, nil
}

func luaMax(v lua.LValue, entry int, what string) (uint16, error) {
	n, ok := v.(lua.LNumber)
	if !ok || float64(n) != math.Trunc(float64(n)) || n < 1 || n > math.MaxUint16 {
		return 0, fmt.Errorf("entry %d (%s) must be an integer 1..65535, got %s", entry, what, describe(v))
	}
	return uint16(n), nil
}
