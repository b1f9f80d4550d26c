// Rooms (docs/protocol.md §13): the payloads of the lobby's requests and
// the server's answers, and the room passwords' verifier and proof (§13.7).

import { Reader, Writer, concat, utf8Bytes } from "./wire";
import { cryptoOf } from "./platform";

/** Room message types (§13.2). */
export const RoomType = {
  ListRequest: 32, List: 33, Create: 34, Join: 35, Leave: 36, Rename: 37, Start: 38, Pause: 39, Kick: 40,
  Chat: 41, Result: 42, State: 43, Event: 44, Update: 45,
} as const;

/** Iterations a client uses for a new room's password (§13.7). */
export const PASSWORD_ITERATIONS = 4096;
/** A client refuses a room asking for more (§13.7). */
export const MAX_PASSWORD_ITERATIONS = 1000000;

/** A room as RoomList, RoomState and RoomUpdate describe it (§13.3). */
export interface RoomInfo {
  room: number;
  name: string;
  mode: string;
  map: string;
  players: number;
  capacity: number;
  state: number;
  open: boolean;
  password?: { salt: Uint8Array; iterations: number };
}

export function readRoomInfo(r: Reader): RoomInfo {
  const room = r.u32();
  const name = r.str(32);
  const mode = r.str(64);
  const map = r.str(64);
  const players = r.u16();
  const capacity = r.u16();
  const state = r.u8();
  const flags = r.u8();
  const info: RoomInfo = { room, name, mode, map, players, capacity, state, open: (flags & 1) !== 0 };
  if (flags & 2) info.password = { salt: r.raw(16).slice(), iterations: r.u32() };
  return info;
}

/** A RoomList (33): a page of rooms and the modes a room may be created with. */
export interface RoomList {
  total: number;
  offset: number;
  rooms: RoomInfo[];
  modes: string[];
}

export function parseRoomList(p: Uint8Array): RoomList {
  const r = new Reader(p);
  const total = r.u16();
  const offset = r.u16();
  const rooms: RoomInfo[] = [];
  for (let n = r.u8(); n > 0; n--) rooms.push(readRoomInfo(r));
  const modes: string[] = [];
  for (let n = r.u8(); n > 0; n--) modes.push(r.str(64));
  r.end();
  return { total, offset, rooms, modes };
}

/** A RoomResult (42): the answer to a room request. */
export interface RoomResult {
  request: number;
  code: number;
  room: number;
  detail: string;
}

export function parseRoomResult(p: Uint8Array): RoomResult {
  const r = new Reader(p);
  const out = { request: r.u16(), code: r.u8(), room: r.u32(), detail: r.str(256) };
  r.end();
  return out;
}

/** A RoomChat (41) from the server. */
export interface RoomChatLine {
  scope: number;
  room: number;
  sender: number;
  senderName: string;
  text: string;
}

export function parseRoomChat(p: Uint8Array): RoomChatLine {
  const r = new Reader(p);
  const out = { scope: r.u8(), room: r.u32(), sender: r.u32(), senderName: r.str(32), text: r.str(256) };
  r.end();
  return out;
}

/** A RoomUpdate (45): a room created or changed, or gone. */
export interface RoomUpdate {
  gone: boolean;
  info: RoomInfo;
}

export function parseRoomUpdate(p: Uint8Array): RoomUpdate {
  const r = new Reader(p);
  const kind = r.u8();
  const info = readRoomInfo(r);
  r.end();
  return { gone: kind === 1, info };
}

export function roomListRequest(offset = 0): Uint8Array {
  return new Writer().u16(offset).bytesOut();
}

/** RoomChat (41) from a client: scope 0 the room (the lobby from the lobby), 1 everyone. */
export function roomChat(scope: 0 | 1, text: string): Uint8Array {
  return new Writer().u8(scope).str(text, 256).bytesOut();
}

/** The verifier's parts of §13.7 for a password. */
async function clientKey(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const c = cryptoOf();
  const salted = await c.pbkdf2Sha256(utf8Bytes(password), salt, iterations, 32);
  return c.hmacSha256(salted, utf8Bytes("Client Key"));
}

/** StoredKey = SHA-256(ClientKey) (§13.7). */
export async function roomStoredKey(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  return cryptoOf().sha256(await clientKey(password, salt, iterations));
}

/** ClientProof for joining room with this session's channel binding (th) (§13.7). */
export async function roomProof(password: string, salt: Uint8Array, iterations: number, room: number, th: Uint8Array): Promise<Uint8Array> {
  if (iterations > MAX_PASSWORD_ITERATIONS) throw new Error(`the room asks for ${iterations} iterations, more than ${MAX_PASSWORD_ITERATIONS}`);
  const c = cryptoOf();
  const key = await clientKey(password, salt, iterations);
  const stored = c.sha256(key);
  const auth = concat(utf8Bytes("sparkhost room v1"), new Writer().u32(room).bytesOut(), th);
  const sig = c.hmacSha256(stored, auth);
  return key.map((b, i) => b ^ sig[i]);
}

/** RoomCreate (34); with a password, a fresh salt and its verifier. */
export async function roomCreate(name: string, mode: string, capacity = 0, password?: string): Promise<Uint8Array> {
  const w = new Writer().str(name, 32).str(mode, 64).u16(capacity);
  if (password === undefined) return w.u8(0).bytesOut();
  const salt = cryptoOf().randomBytes(16);
  const stored = await roomStoredKey(password, salt, PASSWORD_ITERATIONS);
  return w.u8(1).raw(salt).u32(PASSWORD_ITERATIONS).raw(stored).bytesOut();
}

/** RoomJoin (35); for a room with a password, the proof for this session (th). */
export async function roomJoin(room: number, th: Uint8Array, password?: string, info?: RoomInfo): Promise<Uint8Array> {
  const w = new Writer().u32(room);
  if (password === undefined || !info?.password) return w.u8(0).bytesOut();
  const proof = await roomProof(password, info.password.salt, info.password.iterations, room, th);
  return w.u8(32).raw(proof).bytesOut();
}
