package lua

import (
	"encoding/binary"
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The payload reader and writer a script uses for its messages: NetBuffer
// encoding (little-endian integers, f32, u16-length strings, vec3 as three
// f32). A read past the end, or of a float that is NaN or infinite, raises
// a Lua error: a handler never goes on with garbage. A write past
// MAX_PAYLOAD or of a value out of range raises too.

type payloadReader struct {
	b   []byte
	off int
}

type payloadWriter struct {
	b []byte
}

func (m *Module) openBuffers() {
	L := m.L
	m.readerMeta = L.NewTable()
	m.readerMeta.RawSetString("__index", L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{
		"u8": rU8, "u16": rU16, "u32": rU32, "i32": rI32, "f32": rF32, "bool": rBool,
		"str": rStr, "vec3": rVec3, "bytes": rBytes, "remaining": rRemaining,
	}))
	m.readerMeta.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		r := checkReader(L, "reader:__tostring")
		L.Push(lua.LString(fmt.Sprintf("reader(%d of %d bytes read)", r.off, len(r.b))))
		return 1
	}))
	m.readerMeta.RawSetString("__metatable", lua.LString("reader"))

	m.writerMeta = L.NewTable()
	m.writerMeta.RawSetString("__index", L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{
		"u8": wU8, "u16": wU16, "u32": wU32, "i32": wI32, "f32": wF32, "bool": wBool,
		"str": wStr, "vec3": wVec3, "bytes": wBytes, "len": wLen, "data": wData,
	}))
	m.writerMeta.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		w := checkWriter(L, "writer:__tostring")
		L.Push(lua.LString(fmt.Sprintf("writer(%d bytes)", len(w.b))))
		return 1
	}))
	m.writerMeta.RawSetString("__metatable", lua.LString("writer"))
}

func (m *Module) newReader(p []byte) *lua.LUserData {
	ud := m.L.NewUserData()
	ud.Value = &payloadReader{b: p}
	ud.Metatable = m.readerMeta
	return ud
}

// luaWriter is spark.writer(): an empty payload writer.
func (m *Module) luaWriter(L *lua.LState) int {
	ud := L.NewUserData()
	ud.Value = &payloadWriter{}
	ud.Metatable = m.writerMeta
	L.Push(ud)
	return 1
}

func checkReader(L *lua.LState, fn string) *payloadReader {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if r, ok := ud.Value.(*payloadReader); ok {
			return r
		}
	}
	L.RaiseError("%s: call it on a reader, with a colon: reader:%s()", fn, fn[len("reader:"):])
	return nil
}

// take returns the next n bytes or raises the overrun error.
func (r *payloadReader) take(L *lua.LState, fn string, n int) []byte {
	if n > len(r.b)-r.off {
		L.RaiseError("%s: read past the end of the payload (%d bytes at offset %d, payload is %d bytes)",
			fn, n, r.off, len(r.b))
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func rU8(L *lua.LState) int {
	const fn = "reader:u8"
	L.Push(lua.LNumber(checkReader(L, fn).take(L, fn, 1)[0]))
	return 1
}

func rBool(L *lua.LState) int {
	const fn = "reader:bool"
	r := checkReader(L, fn)
	v := r.take(L, fn, 1)[0]
	if v > 1 {
		L.RaiseError("%s: byte at offset %d is %d, not 0 or 1", fn, r.off-1, v)
	}
	L.Push(lua.LBool(v == 1))
	return 1
}

func rU16(L *lua.LState) int {
	const fn = "reader:u16"
	L.Push(lua.LNumber(binary.LittleEndian.Uint16(checkReader(L, fn).take(L, fn, 2))))
	return 1
}

func rU32(L *lua.LState) int {
	const fn = "reader:u32"
	L.Push(lua.LNumber(binary.LittleEndian.Uint32(checkReader(L, fn).take(L, fn, 4))))
	return 1
}

func rI32(L *lua.LState) int {
	const fn = "reader:i32"
	L.Push(lua.LNumber(int32(binary.LittleEndian.Uint32(checkReader(L, fn).take(L, fn, 4)))))
	return 1
}

func (r *payloadReader) f32(L *lua.LState, fn string) lua.LNumber {
	f := math.Float32frombits(binary.LittleEndian.Uint32(r.take(L, fn, 4)))
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		L.RaiseError("%s: the float at offset %d is NaN or infinite", fn, r.off-4)
	}
	return lua.LNumber(f)
}

func rF32(L *lua.LState) int {
	const fn = "reader:f32"
	L.Push(checkReader(L, fn).f32(L, fn))
	return 1
}

func rVec3(L *lua.LState) int {
	const fn = "reader:vec3"
	r := checkReader(L, fn)
	if len(r.b)-r.off < 12 {
		r.take(L, fn, 12)
	}
	L.Push(r.f32(L, fn))
	L.Push(r.f32(L, fn))
	L.Push(r.f32(L, fn))
	return 3
}

// rStr reads a NetBuffer string: a u16 length, then the bytes. The length
// is checked against what is left before anything is copied.
func rStr(L *lua.LState) int {
	const fn = "reader:str"
	r := checkReader(L, fn)
	n := int(binary.LittleEndian.Uint16(r.take(L, fn, 2)))
	if n > len(r.b)-r.off {
		L.RaiseError("%s: string length %d at offset %d runs past the end of the payload (%d bytes left)",
			fn, n, r.off-2, len(r.b)-r.off)
	}
	L.Push(lua.LString(r.take(L, fn, n)))
	return 1
}

// rBytes is reader:bytes([n]): the next n bytes, or all that are left.
func rBytes(L *lua.LState) int {
	const fn = "reader:bytes"
	r := checkReader(L, fn)
	n := len(r.b) - r.off
	if L.Get(2) != lua.LNil {
		n = int(args{L: L, fn: fn, self: 1}.integer(2, "n", 0, wire.MaxPayload))
	}
	L.Push(lua.LString(r.take(L, fn, n)))
	return 1
}

func rRemaining(L *lua.LState) int {
	r := checkReader(L, "reader:remaining")
	L.Push(lua.LNumber(len(r.b) - r.off))
	return 1
}

func checkWriter(L *lua.LState, fn string) *payloadWriter {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if w, ok := ud.Value.(*payloadWriter); ok {
			return w
		}
	}
	L.RaiseError("%s: call it on a writer, with a colon: writer:%s(...)", fn, fn[len("writer:"):])
	return nil
}

// grow checks that n more bytes fit in a payload and returns the writer.
func (w *payloadWriter) grow(L *lua.LState, fn string, n int) *payloadWriter {
	if len(w.b)+n > wire.MaxPayload {
		L.RaiseError("%s: the payload would be %d bytes, more than the limit of %d", fn, len(w.b)+n, wire.MaxPayload)
	}
	return w
}

// self returns the writer's userdata, so that writes chain: w:u8(1):u32(2).
func self(L *lua.LState) int {
	L.Push(L.Get(1))
	return 1
}

func wInt(L *lua.LState, fn string, size int, lo, hi int64) (*payloadWriter, int64) {
	w := checkWriter(L, fn)
	v := args{L: L, fn: fn, self: 1}.integer(2, "value", lo, hi)
	return w.grow(L, fn, size), v
}

func wU8(L *lua.LState) int {
	w, v := wInt(L, "writer:u8", 1, 0, math.MaxUint8)
	w.b = append(w.b, byte(v))
	return self(L)
}

func wBool(L *lua.LState) int {
	const fn = "writer:bool"
	w := checkWriter(L, fn).grow(L, fn, 1)
	v, ok := L.Get(2).(lua.LBool)
	if !ok {
		args{L: L, fn: fn, self: 1}.fail(2, "value", "true or false")
	}
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
	return self(L)
}

func wU16(L *lua.LState) int {
	w, v := wInt(L, "writer:u16", 2, 0, math.MaxUint16)
	w.b = binary.LittleEndian.AppendUint16(w.b, uint16(v))
	return self(L)
}

func wU32(L *lua.LState) int {
	w, v := wInt(L, "writer:u32", 4, 0, math.MaxUint32)
	w.b = binary.LittleEndian.AppendUint32(w.b, uint32(v))
	return self(L)
}

func wI32(L *lua.LState) int {
	w, v := wInt(L, "writer:i32", 4, math.MinInt32, math.MaxInt32)
	w.b = binary.LittleEndian.AppendUint32(w.b, uint32(int32(v)))
	return self(L)
}

func finiteArg(L *lua.LState, fn string, n int, name string) float32 {
	a := args{L: L, fn: fn, self: 1}
	x := a.number(n, name)
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
		a.fail(n, name, "a finite number within the range of an f32")
	}
	return float32(x)
}

func wF32(L *lua.LState) int {
	const fn = "writer:f32"
	w := checkWriter(L, fn)
	v := finiteArg(L, fn, 2, "value")
	w.grow(L, fn, 4).b = binary.LittleEndian.AppendUint32(w.b, math.Float32bits(v))
	return self(L)
}

func wVec3(L *lua.LState) int {
	const fn = "writer:vec3"
	w := checkWriter(L, fn)
	x, y, z := finiteArg(L, fn, 2, "x"), finiteArg(L, fn, 3, "y"), finiteArg(L, fn, 4, "z")
	w.grow(L, fn, 12)
	for _, v := range [3]float32{x, y, z} {
		w.b = binary.LittleEndian.AppendUint32(w.b, math.Float32bits(v))
	}
	return self(L)
}

// wStr writes a NetBuffer string (u16 length + bytes).
func wStr(L *lua.LState) int {
	const fn = "writer:str"
	w := checkWriter(L, fn)
	s := args{L: L, fn: fn, self: 1}.str(2, "value")
	if len(s) > math.MaxUint16 {
		L.RaiseError("%s: argument #1 (value) is %d bytes; a string field holds at most 65535", fn, len(s))
	}
	w.grow(L, fn, 2+len(s))
	w.b = binary.LittleEndian.AppendUint16(w.b, uint16(len(s)))
	w.b = append(w.b, s...)
	return self(L)
}

// wBytes writes raw bytes, without a length.
func wBytes(L *lua.LState) int {
	const fn = "writer:bytes"
	w := checkWriter(L, fn)
	s := args{L: L, fn: fn, self: 1}.str(2, "value")
	w.grow(L, fn, len(s)).b = append(w.b, s...)
	return self(L)
}

func wLen(L *lua.LState) int {
	L.Push(lua.LNumber(len(checkWriter(L, "writer:len").b)))
	return 1
}

// wData returns the bytes written so far as a string.
func wData(L *lua.LState) int {
	L.Push(lua.LString(checkWriter(L, "writer:data").b))
	return 1
}
