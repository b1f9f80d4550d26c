package wire

import (
	"encoding/binary"
	"errors"
	"math"
)

// ErrOverrun is latched by a Reader that was asked for more bytes than remain.
var ErrOverrun = errors.New("wire: read past end of payload")

// ErrTrailing is returned by Reader.Finish when bytes remain after the last field.
var ErrTrailing = errors.New("wire: trailing bytes after last field")

// Vec3 is the protocol's vec3: three f32 (x, y, z).
type Vec3 struct{ X, Y, Z float32 }

// IsFinite reports whether no component is NaN or ±Inf.
func (v Vec3) IsFinite() bool { return finite32(v.X) && finite32(v.Y) && finite32(v.Z) }

func finite32(f float32) bool {
	return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0)
}

// Reader is the NetBuffer reader. It latches the first error: after an overrun
// every further read returns the zero value and HasError reports true, so a
// parser may read all fields and check once at the end. It never allocates
// except in Str, which checks the length against the bytes left first.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader over b. The Reader aliases b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// Reset points r at b and clears its error.
func (r *Reader) Reset(b []byte) { *r = Reader{b: b} }

// HasError reports whether any read failed.
func (r *Reader) HasError() bool { return r.err != nil }

// Err returns the latched error, or nil.
func (r *Reader) Err() error { return r.err }

// Fail latches err (if no error is latched yet); parsers use it for semantic errors.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Remaining returns the number of unread bytes.
func (r *Reader) Remaining() int { return len(r.b) - r.off }

// Offset returns the number of bytes consumed so far.
func (r *Reader) Offset() int { return r.off }

// Finish returns the latched error, or ErrTrailing if unread bytes remain.
func (r *Reader) Finish() error {
	if r.err != nil {
		return r.err
	}
	if r.off != len(r.b) {
		return ErrTrailing
	}
	return nil
}

func (r *Reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = ErrOverrun
		return nil
	}
	p := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return p
}

// U8 reads one byte.
func (r *Reader) U8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

// Bool reads a bool byte; any value other than 0 or 1 latches ErrBadBool.
func (r *Reader) Bool() bool {
	v := r.U8()
	if v > 1 {
		r.Fail(ErrBadBool)
		return false
	}
	return v == 1
}

// ErrBadBool is latched when a bool byte is neither 0 nor 1.
var ErrBadBool = errors.New("wire: bool byte is not 0 or 1")

// U16 reads a little-endian uint16.
func (r *Reader) U16() uint16 {
	if p := r.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

// U32 reads a little-endian uint32.
func (r *Reader) U32() uint32 {
	if p := r.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

// U64 reads a little-endian uint64.
func (r *Reader) U64() uint64 {
	if p := r.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// I32 reads a little-endian int32.
func (r *Reader) I32() int32 { return int32(r.U32()) }

// F32 reads a little-endian IEEE-754 binary32. It does not reject NaN/Inf;
// callers that use the value as game input check with FiniteF32.
func (r *Reader) F32() float32 { return math.Float32frombits(r.U32()) }

// FiniteF32 reads an f32 and latches ErrNonFinite if it is NaN or ±Inf.
func (r *Reader) FiniteF32() float32 {
	f := r.F32()
	if !finite32(f) {
		r.Fail(ErrNonFinite)
		return 0
	}
	return f
}

// ErrNonFinite is latched when a float used as game input is NaN or ±Inf.
var ErrNonFinite = errors.New("wire: float is NaN or infinite")

// Vec3 reads three f32.
func (r *Reader) Vec3() Vec3 { return Vec3{r.F32(), r.F32(), r.F32()} }

// Bytes returns the next n bytes, aliasing the input.
func (r *Reader) Bytes(n int) []byte { return r.take(n) }

// StrBytes reads a NetBuffer string (u16 length + bytes) and returns its bytes
// aliasing the input; nothing is allocated. The length is checked against the
// bytes left before anything else.
func (r *Reader) StrBytes() []byte {
	n := int(r.U16())
	if r.err != nil {
		return nil
	}
	if p := r.take(n); p != nil {
		return p
	}
	if r.err == nil {
		return []byte{}
	}
	return nil
}

// Str reads a NetBuffer string and copies it into a Go string.
func (r *Reader) Str() string { return string(r.StrBytes()) }

// Writer is the NetBuffer writer: it appends to a byte slice it owns. Reuse a
// Writer with Reset to keep the per-packet path free of allocations.
type Writer struct {
	b   []byte
	err error
}

// NewWriter returns a Writer appending to buf[:0].
func NewWriter(buf []byte) Writer { return Writer{b: buf[:0]} }

// ErrStringTooLong is latched by Writer.Str for strings over 65,535 bytes.
var ErrStringTooLong = errors.New("wire: string longer than 65535 bytes")

// Reset empties the writer, keeping its buffer.
func (w *Writer) Reset() { w.b, w.err = w.b[:0], nil }

// Bytes returns the written bytes (aliasing the writer's buffer).
func (w *Writer) Bytes() []byte { return w.b }

// Len returns the number of bytes written.
func (w *Writer) Len() int { return len(w.b) }

// Err returns the latched error, if any.
func (w *Writer) Err() error { return w.err }

// U8 appends one byte.
func (w *Writer) U8(v uint8) { w.b = append(w.b, v) }

// Bool appends 1 or 0.
func (w *Writer) Bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// U16 appends a little-endian uint16.
func (w *Writer) U16(v uint16) { w.b = binary.LittleEndian.AppendUint16(w.b, v) }

// U32 appends a little-endian uint32.
func (w *Writer) U32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }

// U64 appends a little-endian uint64.
func (w *Writer) U64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }

// I32 appends a little-endian int32.
func (w *Writer) I32(v int32) { w.U32(uint32(v)) }

// F32 appends a little-endian binary32.
func (w *Writer) F32(v float32) { w.U32(math.Float32bits(v)) }

// Vec3 appends three f32.
func (w *Writer) Vec3(v Vec3) { w.F32(v.X); w.F32(v.Y); w.F32(v.Z) }

// Raw appends p verbatim.
func (w *Writer) Raw(p []byte) { w.b = append(w.b, p...) }

// Str appends a NetBuffer string. A string over 65,535 bytes latches
// ErrStringTooLong and writes nothing.
func (w *Writer) Str(s string) {
	if len(s) > 0xFFFF {
		if w.err == nil {
			w.err = ErrStringTooLong
		}
		return
	}
	w.U16(uint16(len(s)))
	w.b = append(w.b, s...)
}

// StrBytes appends a NetBuffer string from bytes.
func (w *Writer) StrBytes(s []byte) {
	if len(s) > 0xFFFF {
		if w.err == nil {
			w.err = ErrStringTooLong
		}
		return
	}
	w.U16(uint16(len(s)))
	w.b = append(w.b, s...)
}
