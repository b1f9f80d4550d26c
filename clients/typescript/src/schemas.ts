// Message schemas: the module types' size rules (docs/protocol.md §10), the
// ModuleSchemas announcement (§10.2), and the checks a client applies to
// every message before it is delivered (§5.6, §9).

import { Reader, WireError, MAX_PAYLOAD, utf8Text } from "./wire";
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

/** Parses a ModuleSchemas payload, refusing anything §10.2 forbids. */
export function parseModuleSchemas(payload: Uint8Array): ModuleSchemas {
  const r = new Reader(payload);
  const revision = r.u32();
  const count = r.u16();
  // Each entry takes at least 23 bytes: bound the count before allocating.
  if (count * 23 > r.remaining) throw new WireError("ModuleSchemas count exceeds the payload");
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
    if (flags & 0xfe) throw new WireError("ModuleSchemas flags");
    const owner = checkName(r.raw(r.u16()), 64, "ModuleSchemas owner");
    if (owner === "builtin") throw new WireError("ModuleSchemas owner builtin");
    const name = checkName(r.raw(r.u16()), 64, "ModuleSchemas name");
    schemas.push({ id, name, owner, direction, channel, minLen, maxLen, stringOffset, requiresAdmitted: (flags & 1) !== 0 });
  }
  r.end();
  return { revision, schemas };
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

/** What a client accepts from the server of each built-in type: channel and size (§9, §14.2). */
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
