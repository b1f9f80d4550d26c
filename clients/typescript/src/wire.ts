// NetBuffer encoding (docs/protocol.md, the introduction): little-endian
// integers, f32 as IEEE-754 binary32, vec3 as three f32, str as a u16 byte
// length followed by that many bytes of UTF-8. Every read checks its length
// first; a failure throws WireError, which the client's receive loop turns
// into a counted drop.

/** The largest payload a message may carry (§2). */
export const MAX_PAYLOAD = 65453;

/** A payload or datagram that does not parse. */
export class WireError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WireError";
  }
}

export interface Vec3 {
  x: number;
  y: number;
  z: number;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const utf8enc = new TextEncoder();

/** UTF-8 bytes of s. */
export function utf8Bytes(s: string): Uint8Array {
  return utf8enc.encode(s);
}

/**
 * Whether s holds a UTF-16 surrogate without its pair: TextEncoder would
 * silently send U+FFFD for it, so the Writer refuses it instead.
 */
export function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d < 0xdc00 || d > 0xdfff) return true;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return true;
    }
  }
  return false;
}

/** Decodes strict UTF-8 (no replacement characters), or throws WireError. */
export function utf8Text(b: Uint8Array): string {
  try {
    return utf8.decode(b);
  } catch {
    throw new WireError("invalid UTF-8");
  }
}

/**
 * Length prefix of a `bytes` field and count prefix of an `array` field in a
 * typed module message: a u16 LE, like str's byte length (docs/protocol.md
 * §10.1, kinds 8 and 9). The generator's sequencePrefix (tsgen/tsgen.go)
 * is the same constant.
 */
export const SEQUENCE_PREFIX_BYTES = 2;
export function writeSequencePrefix(w: Writer, n: number): void {
  w.u16(n);
}
export function readSequencePrefix(r: Reader): number {
  return r.u16();
}

/** Reads a payload field by field; every read is bounds-checked. */
export class Reader {
  private off = 0;
  private readonly view: DataView;

  constructor(private readonly buf: Uint8Array) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  get offset(): number {
    return this.off;
  }

  get remaining(): number {
    return this.buf.length - this.off;
  }

  private need(n: number, what: string): void {
    if (this.buf.length - this.off < n) {
      throw new WireError(`truncated ${what} at byte ${this.off}`);
    }
  }

  u8(): number {
    this.need(1, "u8");
    return this.buf[this.off++];
  }

  u16(): number {
    this.need(2, "u16");
    const v = this.view.getUint16(this.off, true);
    this.off += 2;
    return v;
  }

  u32(): number {
    this.need(4, "u32");
    const v = this.view.getUint32(this.off, true);
    this.off += 4;
    return v;
  }

  i32(): number {
    this.need(4, "i32");
    const v = this.view.getInt32(this.off, true);
    this.off += 4;
    return v;
  }

  u64(): bigint {
    this.need(8, "u64");
    const v = this.view.getBigUint64(this.off, true);
    this.off += 8;
    return v;
  }

  f32(): number {
    this.need(4, "f32");
    const v = this.view.getFloat32(this.off, true);
    this.off += 4;
    return v;
  }

  /** An f32 that must be finite (not NaN or ±Inf). */
  finiteF32(): number {
    const v = this.f32();
    if (!Number.isFinite(v)) throw new WireError(`non-finite f32 at byte ${this.off - 4}`);
    return v;
  }

  vec3(): Vec3 {
    return { x: this.finiteF32(), y: this.finiteF32(), z: this.finiteF32() };
  }

  /** n raw bytes (a view into the payload, not a copy). */
  raw(n: number): Uint8Array {
    this.need(n, `${n} bytes`);
    const v = this.buf.subarray(this.off, this.off + n);
    this.off += n;
    return v;
  }

  /** A str of at most max bytes: valid UTF-8 without NUL. */
  str(max: number): string {
    const n = this.u16();
    if (n > max) throw new WireError(`string of ${n} bytes, at most ${max} allowed`);
    const b = this.raw(n);
    if (b.includes(0)) throw new WireError("NUL in string");
    return utf8Text(b);
  }

  /** A bytes field: a u16 length (SEQUENCE_PREFIX_BYTES) then that many bytes, at most max. */
  bytes(max: number): Uint8Array {
    const n = readSequencePrefix(this);
    if (n > max) throw new WireError(`bytes field of ${n} bytes, at most ${max} allowed`);
    return this.raw(n).slice();
  }

  /** Unsigned LEB128 (§5.1): ≤ 5 bytes, value < 2^32, shortest form. */
  uvarint(): number {
    let v = 0;
    for (let i = 0; i < 5; i++) {
      this.need(1, "uvarint");
      const b = this.buf[this.off++];
      if (i === 4 && b > 0x0f) throw new WireError("uvarint ≥ 2^32");
      if (i > 0 && b === 0) throw new WireError("uvarint not in shortest form");
      v += (b & 0x7f) * 2 ** (7 * i);
      if ((b & 0x80) === 0) return v;
    }
    throw new WireError("uvarint longer than 5 bytes");
  }

  /** Throws unless every byte was read: trailing bytes make a payload malformed (§9). */
  end(): void {
    if (this.off !== this.buf.length) {
      throw new WireError(`${this.buf.length - this.off} trailing bytes`);
    }
  }
}

/** Builds a payload; every write checks its value's range. */
export class Writer {
  private buf = new Uint8Array(64);
  private view = new DataView(this.buf.buffer);
  private len = 0;

  get length(): number {
    return this.len;
  }

  private grow(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.len + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  private int(v: number, min: number, max: number, what: string): void {
    if (!Number.isInteger(v) || v < min || v > max) {
      throw new WireError(`${what} out of range: ${v}`);
    }
  }

  u8(v: number): this {
    this.int(v, 0, 0xff, "u8");
    this.grow(1);
    this.buf[this.len++] = v;
    return this;
  }

  u16(v: number): this {
    this.int(v, 0, 0xffff, "u16");
    this.grow(2);
    this.view.setUint16(this.len, v, true);
    this.len += 2;
    return this;
  }

  u32(v: number): this {
    this.int(v, 0, 0xffffffff, "u32");
    this.grow(4);
    this.view.setUint32(this.len, v, true);
    this.len += 4;
    return this;
  }

  i32(v: number): this {
    this.int(v, -0x80000000, 0x7fffffff, "i32");
    this.grow(4);
    this.view.setInt32(this.len, v, true);
    this.len += 4;
    return this;
  }

  u64(v: bigint): this {
    this.grow(8);
    this.view.setBigUint64(this.len, v, true);
    this.len += 8;
    return this;
  }

  f32(v: number): this {
    // A finite double beyond binary32's range (|v| > 3.4028234663852886e38) rounds to ±Inf: refused too.
    if (typeof v !== "number" || !Number.isFinite(Math.fround(v))) throw new WireError(`f32 not a finite binary32 number: ${v}`);
    this.grow(4);
    this.view.setFloat32(this.len, v, true);
    this.len += 4;
    return this;
  }

  vec3(v: Vec3): this {
    if (v === null || typeof v !== "object") throw new WireError("vec3 is not an object");
    return this.f32(v.x).f32(v.y).f32(v.z);
  }

  raw(b: Uint8Array): this {
    this.grow(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
    return this;
  }

  /** A str of at most max bytes of UTF-8, without NUL. */
  str(s: string, max: number): this {
    if (typeof s !== "string") throw new WireError("str is not a string");
    if (hasLoneSurrogate(s)) throw new WireError("str has a lone UTF-16 surrogate (not encodable as UTF-8)");
    const b = utf8Bytes(s);
    if (b.length > max) throw new WireError(`string of ${b.length} bytes, at most ${max} allowed`);
    if (b.includes(0)) throw new WireError("NUL in string");
    return this.u16(b.length).raw(b);
  }

  /** A bytes field of at most max bytes (u16 length prefix, SEQUENCE_PREFIX_BYTES). */
  bytes(b: Uint8Array, max: number): this {
    if (!(b instanceof Uint8Array)) throw new WireError("bytes is not a Uint8Array");
    if (b.length > max) throw new WireError(`bytes field of ${b.length} bytes, at most ${max} allowed`);
    writeSequencePrefix(this, b.length);
    return this.raw(b);
  }

  uvarint(v: number): this {
    this.int(v, 0, 0xffffffff, "uvarint");
    do {
      let b = v % 128;
      v = Math.floor(v / 128);
      if (v > 0) b |= 0x80;
      this.grow(1);
      this.buf[this.len++] = b;
    } while (v > 0);
    return this;
  }

  /** A copy of what was written. */
  bytesOut(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

/** Length of v as a uvarint. */
export function uvarintLen(v: number): number {
  let n = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

export function hex(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

export function fromHex(s: string): Uint8Array {
  if (s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) throw new Error("bad hex");
  const b = new Uint8Array(s.length / 2);
  for (let i = 0; i < b.length; i++) b[i] = parseInt(s.substr(2 * i, 2), 16);
  return b;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}
