// Message schemas: the module types' size rules (docs/protocol.md §10), the
// ModuleSchemas announcement (§10.2), and the checks a client applies to
// every message before it is delivered (§5.6, §9).

import { Reader, WireError, MAX_PAYLOAD, utf8Text, readSequencePrefix } from "./wire";
import { Channel } from "./body";

export enum Direction {
  ClientToServer = 1,
  ServerToClient = 2,
  Both = 3,
}

/** string_field_offset of a message without a checked string. */
export const NO_STRING_FIELD = 0xffffffff;

/** A module message type's rule, as generated code declares it or ModuleSchemas announces it. */
export interface MessageSchema {
  id: number;
  name: string;
  owner: string;
  direction: Direction;
  channel: Channel;
  minLen: number;
  maxLen: number;
  /** The payload offset of a str that must be valid UTF-8 without NUL; NO_STRING_FIELD for none. */
  stringOffset: number;
  requiresAdmitted: boolean;
  /**
   * The payload's fields, in order, for a typed type (§10.1): the receiver
   * then checks the whole layout. Undefined for an untyped (size-only) type.
   */
  fields?: FieldSchema[];
}

/** The kinds of a typed field and their announcement codes (§10.1). */
export enum Kind {
  U8 = 1,
  U16 = 2,
  U32 = 3,
  I32 = 4,
  F32 = 5,
  Vec3 = 6,
  Str = 7,
  Bytes = 8,
  Array = 9,
}

/** One field of a typed message type (§10.1, §10.2). */
export interface FieldSchema {
  /** An identifier: 1..32 bytes of ASCII letters, digits and _, not starting with a digit. */
  name: string;
  kind: Kind;
  /** Str and Bytes: the most bytes (1..65535). */
  max?: number;
  /** Array: the element's kind (any but Array). */
  elem?: Kind;
  /** Array of Str or Bytes: the element's most bytes (1..65535). */
  elemMax?: number;
  /** Array: the most elements (1..65535). */
  maxCount?: number;
}

/** Bounds of a typed declaration (§10.1). */
export const MAX_FIELDS = 32;
export const MAX_FIELD_NAME = 32;

/** The encoded size of a fixed-size kind (codes 1..6), 0 for the others. */
function fixedSize(k: Kind): number {
  switch (k) {
    case Kind.U8:
      return 1;
    case Kind.U16:
      return 2;
    case Kind.U32:
    case Kind.I32:
    case Kind.F32:
      return 4;
    case Kind.Vec3:
      return 12;
  }
  return 0;
}

function hasMax(k: Kind): boolean {
  return k === Kind.Str || k === Kind.Bytes;
}

function validMax(n: unknown): n is number {
  return typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= 0xffff;
}

/** Whether s may name a field: 1..32 bytes, an ASCII letter or _ first, then letters, digits or _. */
export function validFieldName(s: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]{0,31}$/.test(s);
}

/** What a field list implies for the size rules (§10.1). */
export interface Layout {
  minLen: number;
  maxLen: number;
  stringOffset: number;
}

/** Smallest and largest encoding of one field, or throws WireError naming what is wrong. */
function fieldSize(f: FieldSchema): [number, number] {
  const n = fixedSize(f.kind);
  if (n > 0) {
    if (f.max !== undefined || f.elem !== undefined || f.elemMax !== undefined || f.maxCount !== undefined) {
      throw new WireError(`a fixed-size field takes no max, elem or count`);
    }
    return [n, n];
  }
  if (hasMax(f.kind)) {
    if (!validMax(f.max) || f.elem !== undefined || f.elemMax !== undefined || f.maxCount !== undefined) {
      throw new WireError(`a str or bytes field needs a max of 1..65535 and takes no elem or count`);
    }
    return [2, 2 + f.max];
  }
  if (f.kind === Kind.Array) {
    if (!validMax(f.maxCount) || f.max !== undefined) throw new WireError("an array needs a max count of 1..65535");
    const e = f.elem;
    if (e === undefined || !(fixedSize(e) > 0 || hasMax(e))) throw new WireError("an array's element is u8, u16, u32, i32, f32, vec3, str or bytes");
    let eh = fixedSize(e);
    if (hasMax(e)) {
      if (!validMax(f.elemMax)) throw new WireError("a str or bytes element needs a max of 1..65535");
      eh = 2 + f.elemMax;
    } else if (f.elemMax !== undefined) {
      throw new WireError("a fixed-size element takes no max");
    }
    return [2, 2 + f.maxCount * eh];
  }
  throw new WireError(`unknown field kind ${f.kind}`);
}

/**
 * Checks a typed field list — 1..32 fields, names unique identifiers, kinds
 * and maxima valid, at most MAX_PAYLOAD bytes — and returns the size rules
 * it implies: min_len, max_len, and the offset of the first str field when
 * every field before it has a fixed size (else NO_STRING_FIELD).
 */
export function fieldLayout(fields: FieldSchema[]): Layout {
  if (!Array.isArray(fields) || fields.length < 1 || fields.length > MAX_FIELDS) {
    throw new WireError(`a typed message declares 1..${MAX_FIELDS} fields`);
  }
  const seen = new Set<string>();
  let lo = 0;
  let hi = 0;
  let stringOffset = NO_STRING_FIELD;
  let fixed = true;
  for (const f of fields) {
    if (typeof f.name !== "string" || !validFieldName(f.name)) throw new WireError(`field name ${JSON.stringify(f.name)} is not an identifier of 1..${MAX_FIELD_NAME} bytes`);
    if (seen.has(f.name)) throw new WireError(`field ${f.name} is declared twice`);
    seen.add(f.name);
    let size: [number, number];
    try {
      size = fieldSize(f);
    } catch (e) {
      throw new WireError(`field ${f.name}: ${(e as Error).message}`);
    }
    if (f.kind === Kind.Str && fixed && stringOffset === NO_STRING_FIELD) stringOffset = lo;
    fixed = fixed && size[0] === size[1];
    lo += size[0];
    hi += size[1];
  }
  if (hi > MAX_PAYLOAD) throw new WireError(`the fields take up to ${hi} bytes, above ${MAX_PAYLOAD}`);
  return { minLen: lo, maxLen: hi, stringOffset };
}

/** One value of kind k (not an array) at the reader, checked as §10.1 says; throws WireError. */
function checkValue(r: Reader, k: Kind, max: number): void {
  switch (k) {
    case Kind.U8:
      r.u8();
      return;
    case Kind.U16:
      r.u16();
      return;
    case Kind.U32:
    case Kind.I32:
      r.u32();
      return;
    case Kind.F32:
      r.finiteF32();
      return;
    case Kind.Vec3:
      r.vec3();
      return;
    case Kind.Str:
      r.str(max);
      return;
    case Kind.Bytes: {
      const n = readSequencePrefix(r);
      if (n > max) throw new WireError(`bytes field of ${n} bytes, at most ${max} allowed`);
      r.raw(n);
      return;
    }
  }
  throw new WireError(`unknown field kind ${k}`);
}

/**
 * Checks a payload against a typed field list (§10.1): every field present
 * and within its bounds, every str UTF-8 without NUL, every f32 and vec3
 * finite, every count within its max, nothing after the last field. Throws
 * WireError naming the field.
 */
export function checkFields(fields: FieldSchema[], payload: Uint8Array): void {
  const r = new Reader(payload);
  for (const f of fields) {
    try {
      if (f.kind === Kind.Array) {
        const n = readSequencePrefix(r);
        if (n > f.maxCount!) throw new WireError(`${n} elements, at most ${f.maxCount}`);
        for (let i = 0; i < n; i++) checkValue(r, f.elem!, f.elemMax ?? 0);
      } else {
        checkValue(r, f.kind, f.max ?? 0);
      }
    } catch (e) {
      throw new WireError(`${f.name}: ${(e as Error).message}`);
    }
  }
  r.end();
}

/** A ModuleSchemas announcement (§10.2). */
export interface ModuleSchemas {
  revision: number;
  schemas: MessageSchema[];
}

/** Unicode White_Space (String.prototype.trim's set differs: it includes U+FEFF). */
function isWhiteSpace(c: number): boolean {
  return (c >= 0x09 && c <= 0x0d) || c === 0x20 || c === 0x85 || c === 0xa0 || c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000;
}

/**
 * The name rule (docs/protocol.md, introduction): 1..max bytes of UTF-8, no
 * control character (Cc: C0, DEL, C1), not only white space.
 */
export function checkName(b: Uint8Array, max: number, what: string): string {
  if (b.length < 1 || b.length > max) throw new WireError(`${what}: ${b.length} bytes, 1..${max} allowed`);
  const s = utf8Text(b);
  let blank = true;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c < 0x20 || (c >= 0x7f && c < 0xa0)) throw new WireError(`${what}: control character`);
    if (!isWhiteSpace(c)) blank = false;
  }
  if (blank) throw new WireError(`${what}: only white space`);
  return s;
}

/** Entry flags of the announcement (§10.2). */
const FLAG_ADMITTED = 1;
const FLAG_TYPED = 2;

/** The smallest entry: the fixed fields and two names of one byte. */
const ENTRY_MIN = 2 + 1 + 1 + 4 + 4 + 4 + 1 + 3 + 3;
/** The smallest encoded field: a 1-byte name and a kind. */
const FIELD_MIN = 3 + 1;

/** A module's protocol: the newest version it speaks and the oldest it serves (§10.4). */
export interface ModuleProtocol {
  module: string;
  protocol: number;
  oldest: number;
}

/** A ModuleProtocols announcement (§10.4). */
export interface ModuleProtocols {
  revision: number;
  modules: ModuleProtocol[];
}

/** Parses a ModuleProtocols payload, refusing anything §10.4 forbids. */
export function parseModuleProtocols(payload: Uint8Array): ModuleProtocols {
  const r = new Reader(payload);
  const revision = r.u32();
  const count = r.u16();
  if (count * (3 + 2 + 2) > r.remaining) throw new WireError("ModuleProtocols count exceeds the payload");
  const modules: ModuleProtocol[] = [];
  let last: Uint8Array | undefined;
  for (let i = 0; i < count; i++) {
    const raw = r.raw(r.u16());
    const module = checkName(raw, 64, "ModuleProtocols module");
    if (last !== undefined && compareBytes(last, raw) >= 0) throw new WireError("ModuleProtocols modules must ascend without repeats");
    last = raw;
    const protocol = r.u16();
    const oldest = r.u16();
    if (oldest < 1 || oldest > protocol) throw new WireError("ModuleProtocols needs 1 ≤ oldest ≤ protocol");
    modules.push({ module, protocol, oldest });
  }
  if (r.remaining !== 0) throw new WireError("ModuleProtocols: bytes after the last entry");
  return { revision, modules };
}

/** Compares two byte strings as unsigned bytes (the order of module names). */
function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length && i < b.length; i++) {
    if (a[i] !== b[i]) return a[i] - b[i];
  }
  return a.length - b.length;
}

/** Parses a ModuleSchemas payload, refusing anything §10.2 forbids. */
export function parseModuleSchemas(payload: Uint8Array): ModuleSchemas {
  const r = new Reader(payload);
  const revision = r.u32();
  const count = r.u16();
  // Bound the count by the payload before allocating.
  if (count * ENTRY_MIN > r.remaining) throw new WireError("ModuleSchemas count exceeds the payload");
  const schemas: MessageSchema[] = [];
  let last = 0;
  for (let i = 0; i < count; i++) {
    const id = r.u16();
    if (id < 1000 || id <= last) throw new WireError("ModuleSchemas ids must be ≥ 1000, ascending, without repeats");
    last = id;
    const direction = r.u8();
    if (direction < 1 || direction > 3) throw new WireError("ModuleSchemas direction");
    const channel = r.u8();
    if (channel > 2) throw new WireError("ModuleSchemas channel");
    const minLen = r.u32();
    const maxLen = r.u32();
    if (maxLen < minLen || maxLen > MAX_PAYLOAD) throw new WireError("ModuleSchemas lengths");
    const stringOffset = r.u32();
    if (stringOffset !== NO_STRING_FIELD && stringOffset + 2 > maxLen) throw new WireError("ModuleSchemas string_field_offset");
    const flags = r.u8();
    if (flags & ~(FLAG_ADMITTED | FLAG_TYPED)) throw new WireError("ModuleSchemas flags");
    const owner = checkName(r.raw(r.u16()), 64, "ModuleSchemas owner");
    if (owner === "builtin") throw new WireError("ModuleSchemas owner builtin");
    const name = checkName(r.raw(r.u16()), 64, "ModuleSchemas name");
    const s: MessageSchema = { id, name, owner, direction, channel, minLen, maxLen, stringOffset, requiresAdmitted: (flags & FLAG_ADMITTED) !== 0 };
    if (flags & FLAG_TYPED) {
      s.fields = readFields(r);
      const l = fieldLayout(s.fields);
      if (l.minLen !== minLen || l.maxLen !== maxLen || l.stringOffset !== stringOffset) {
        throw new WireError(`ModuleSchemas ${name}: sizes ${minLen}..${maxLen} str@${stringOffset} are not the ones its fields imply (${l.minLen}..${l.maxLen} str@${l.stringOffset})`);
      }
    }
    schemas.push(s);
  }
  r.end();
  return { revision, schemas };
}

/** A typed entry's field list (§10.2); fieldLayout checks the rest. */
function readFields(r: Reader): FieldSchema[] {
  const n = r.u8();
  if (n < 1 || n > MAX_FIELDS) throw new WireError("ModuleSchemas field_count must be 1..32");
  if (n * FIELD_MIN > r.remaining) throw new WireError("ModuleSchemas field_count exceeds the payload");
  const fields: FieldSchema[] = [];
  for (let i = 0; i < n; i++) {
    const nb = r.raw(r.u16());
    let name = "";
    for (const b of nb) name += String.fromCharCode(b); // ASCII only: validFieldName refuses the rest
    if (nb.length > MAX_FIELD_NAME || !validFieldName(name)) throw new WireError("ModuleSchemas field name is not an identifier of 1..32 bytes");
    const kind = r.u8();
    const f: FieldSchema = { name, kind };
    if (kind === Kind.Str || kind === Kind.Bytes) {
      f.max = r.u16();
    } else if (kind === Kind.Array) {
      f.elem = r.u8();
      if (f.elem === Kind.Str || f.elem === Kind.Bytes) f.elemMax = r.u16();
      f.maxCount = r.u16();
    } else if (kind < Kind.U8 || kind > Kind.Array) {
      throw new WireError(`ModuleSchemas field kind ${kind}`);
    }
    fields.push(f);
  }
  return fields;
}

/** §5.6 refusal reasons. */
export enum RefuseReason {
  UnknownType = 1,
  NotLoaded = 2,
  WrongDirection = 3,
  WrongChannel = 4,
  BadSize = 5,
  Malformed = 6,
  Incomplete = 7,
  Inconsistent = 8,
}

/** What a client accepts from the server of each built-in type: channel and size (§9, §13.2). */
interface BuiltinRule {
  channel: Channel;
  min: number;
  max: number;
}

const U = Channel.Unreliable;
const R = Channel.Reliable;
const O = Channel.ReliableOrdered;
const ANY = MAX_PAYLOAD;

/** Built-in types a server sends in a session, with their channel and size bounds. */
export const BUILTIN_SERVER_TYPES: { [type: number]: BuiltinRule } = {
  4: { channel: U, min: 3, max: 259 }, // Disconnect
  5: { channel: U, min: 8, max: 8 }, // Heartbeat
  6: { channel: U, min: 10, max: 10 }, // Ack
  7: { channel: O, min: 19, max: ANY }, // EntitySpawn
  8: { channel: O, min: 4, max: 4 }, // EntityDestroy
  9: { channel: U, min: 12, max: ANY }, // EntityStateUpdate
  10: { channel: R, min: 6, max: ANY }, // EntityRPC
  12: { channel: U, min: 37, max: 37 }, // InputAck
  13: { channel: R, min: 5, max: 292 }, // ChatMessage
  14: { channel: O, min: 26, max: ANY }, // GameStateSync
  15: { channel: O, min: 12, max: 76 }, // MatchStart
  16: { channel: O, min: 9, max: 9 }, // MatchEnd
  17: { channel: O, min: 24, max: 24 }, // PlayerRespawn
  18: { channel: O, min: 2, max: ANY }, // ScoreUpdate
  20: { channel: U, min: 12, max: 12 }, // MessageRefused
  21: { channel: R, min: 6, max: ANY }, // ModuleSchemas
  22: { channel: R, min: 6, max: ANY }, // ModuleProtocols
  33: { channel: O, min: 6, max: 5254 }, // RoomList
  41: { channel: R, min: 15, max: 301 }, // RoomChat
  42: { channel: O, min: 9, max: 265 }, // RoomResult
  43: { channel: O, min: 26, max: 39116 }, // RoomState
  44: { channel: O, min: 15, max: 47 }, // RoomEvent
  45: { channel: O, min: 19, max: 197 }, // RoomUpdate
};

/** Built-in types a client may send, with their channel. */
export const BUILTIN_CLIENT_TYPES: { [type: number]: Channel } = {
  4: U, 5: U, 6: U, 10: R, 11: U, 13: R, 20: U,
  32: O, 34: O, 35: O, 36: O, 37: O, 38: O, 39: O, 40: O, 41: R,
};

/**
 * Checks a message from the server against its type's rule: undefined when
 * it is accepted, else the refusal reason. Module types use the client's own
 * schemas first, then the server's announcement.
 */
export function checkFromServer(
  type: number,
  channel: Channel,
  payload: Uint8Array,
  lookup: (type: number) => MessageSchema | undefined,
): RefuseReason | undefined {
  if (type < 1000) {
    const rule = BUILTIN_SERVER_TYPES[type];
    if (!rule) return BUILTIN_CLIENT_TYPES[type] !== undefined ? RefuseReason.WrongDirection : RefuseReason.UnknownType;
    if (channel !== rule.channel) return RefuseReason.WrongChannel;
    if (payload.length < rule.min || payload.length > rule.max) return RefuseReason.BadSize;
    return undefined;
  }
  const s = lookup(type);
  if (!s) return RefuseReason.UnknownType;
  if (s.direction === Direction.ClientToServer) return RefuseReason.WrongDirection;
  if (channel !== s.channel) return RefuseReason.WrongChannel;
  if (payload.length < s.minLen || payload.length > s.maxLen) return RefuseReason.BadSize;
  if (s.fields !== undefined) {
    try {
      checkFields(s.fields, payload);
    } catch {
      return RefuseReason.Malformed;
    }
    return undefined;
  }
  if (s.stringOffset !== NO_STRING_FIELD) {
    try {
      const r = new Reader(payload.subarray(s.stringOffset));
      r.str(MAX_PAYLOAD);
    } catch {
      return RefuseReason.Malformed;
    }
  }
  return undefined;
}
