// The v4 handshake (docs/protocol.md §2, §3): plain frames, the ClientHello,
// CookieReply, ConnectAccepted with its transcript, signature and key
// schedule, ConnectRejected, and the identity pin (§8).

import { Reader, Writer, WireError, MAX_PAYLOAD, concat, equalBytes, utf8Bytes } from "./wire";
import { AsyncX25519Key, X25519Key, cryptoOf } from "./platform";

export const PACKET_MAGIC = 0x5350524b; // bytes 4B 52 50 53
export const HANDSHAKE_MAGIC = 0x484e5053; // bytes 53 50 4E 48, "SPNH"
export const PROTOCOL_VERSION = 4;
export const SUITE = 1;
export const HELLO_LEN = 1176;
export const HELLO_CORE_LEN = 55;
export const MAX_COOKIE = 64;
export const ACCEPT_LEN = 155;

export const FRAME_PLAIN = 0x01;
export const FRAME_SEALED = 0x02;

/** Message types of the handshake (§9). */
export const T_CONNECT = 1;
export const T_CONNECT_ACCEPTED = 2;
export const T_CONNECT_REJECTED = 3;
export const T_COOKIE_REPLY = 19;

/** ConnectRejected reasons (§3.11). */
export const RejectReason: { [code: number]: string } = {
  1: "ProtocolMissing",
  2: "ProtocolTooOld",
  3: "ProtocolTooNew",
  4: "MalformedHandshake",
  5: "UnsupportedSuite",
  6: "ServerFull",
  7: "Banned",
  8: "AddressLimit",
};

/** A §2 packet. */
export interface Packet {
  type: number;
  channel: number;
  senderId: number;
  sequence: number;
  payload: Uint8Array;
}

/** Encodes a §2 packet on channel 0 (the handshake's), prefixed by the plain-frame byte. */
export function plainFrame(type: number, payload: Uint8Array): Uint8Array {
  const w = new Writer();
  w.u8(FRAME_PLAIN).u32(PACKET_MAGIC).u16(type).u8(0).u32(0).u32(0).f32(0).u32(payload.length).raw(payload);
  return w.bytesOut();
}

/** Parses a §2 packet strictly (magic, channel, length agreement). */
export function parsePacket(b: Uint8Array): Packet {
  const r = new Reader(b);
  if (r.u32() !== PACKET_MAGIC) throw new WireError("bad packet magic");
  const type = r.u16();
  const channel = r.u8();
  if (channel > 2) throw new WireError("bad channel");
  const senderId = r.u32();
  const sequence = r.u32();
  r.f32(); // timestamp: informational only
  const n = r.u32();
  if (n > MAX_PAYLOAD) throw new WireError("payload too long");
  if (channel === 2) r.u32(); // OrderedSequence
  if (n !== r.remaining) throw new WireError("payload length disagrees with the datagram");
  return { type, channel, senderId, sequence, payload: r.raw(n) };
}

/** The client's half of one v4 handshake: ephemeral key, nonce, hello core. */
export class ClientHandshake {
  readonly nonce: Uint8Array;
  readonly core: Uint8Array;
  private readonly key: X25519Key | AsyncX25519Key;
  cookie: Uint8Array = new Uint8Array(0);
  /** The primitives the platform's asynchronous implementation gave this handshake ("X25519", "Ed25519", ...). */
  readonly asyncUsed: string[] = [];

  /**
   * A handshake with a fresh key from the platform's asynchronous X25519
   * (WebCrypto) where it has one, else its synchronous one.
   */
  static async create(): Promise<ClientHandshake> {
    const key = await cryptoOf().handshake?.x25519();
    return new ClientHandshake(undefined, undefined, key);
  }

  constructor(secret?: Uint8Array, nonce?: Uint8Array, key?: AsyncX25519Key) {
    const c = cryptoOf();
    this.key = key ?? c.x25519(secret); // a fixed secret: test vectors only
    if (key) this.asyncUsed.push("X25519");
    const pub = this.key.publicKey;
    this.nonce = nonce ?? c.randomBytes(16);
    const w = new Writer();
    w.u32(HANDSHAKE_MAGIC).u16(PROTOCOL_VERSION).u8(SUITE).raw(pub).raw(this.nonce);
    this.core = w.bytesOut();
  }

  /** The Connect payload: core, cookie_len, cookie, zero padding to 1176 bytes (§3.3.1). */
  hello(): Uint8Array {
    const out = new Uint8Array(HELLO_LEN);
    out.set(this.core, 0);
    out[HELLO_CORE_LEN] = this.cookie.length;
    out.set(this.cookie, HELLO_CORE_LEN + 1);
    return out;
  }

  /** The Connect datagram (1200 bytes). */
  helloDatagram(): Uint8Array {
    return plainFrame(T_CONNECT, this.hello());
  }

  /**
   * Takes a CookieReply payload (§3.4): version 4, this hello's nonce, a
   * cookie of 1..64 bytes, nothing after it. Returns false (ignore it) otherwise.
   */
  acceptCookieReply(payload: Uint8Array): boolean {
    if (payload.length < 20 || payload.length > 83) return false;
    const r = new Reader(payload);
    if (r.u16() !== PROTOCOL_VERSION) return false;
    if (!equalBytes(r.raw(16), this.nonce)) return false;
    const n = r.u8();
    if (n < 1 || n > MAX_COOKIE || r.remaining !== n) return false;
    this.cookie = r.raw(n).slice();
    return true;
  }

  /**
   * Checks a ConnectAccepted payload in §3.10 step 4's order. Returns
   * undefined to ignore it (wrong size, version, suite, id 0, zero secret) and
   * throws HandshakeFailure to give up (identity, signature).
   */
  accept(payload: Uint8Array, trusts: (identity: Uint8Array) => boolean): Session | undefined {
    const f = readAccepted(payload, trusts);
    if (!f) return undefined;
    const { clientId, identity, serverEphemeral, signature } = f;
    const th = transcriptHash(this.core, payload);
    if (!cryptoOf().ed25519Verify(identity, th, signature)) throw new HandshakeFailure("HandshakeAuthFailed", "the ConnectAccepted signature does not verify");
    if (clientId === 0) return undefined;
    const ss = this.key.agree(serverEphemeral);
    if (ss instanceof Promise) throw new Error("an asynchronous key: use acceptAsync");
    if (!ss) return undefined; // a key the platform refuses (small order): treated as an all-zero secret
    if (ss.every((b) => b === 0)) return undefined;
    return deriveSession(clientId, identity, th, ss);
  }

  /**
   * accept with the platform's asynchronous primitives where it has them
   * (WebCrypto's SHA-256, Ed25519, X25519, HKDF and HMAC), the same checks
   * in the same order.
   */
  async acceptAsync(payload: Uint8Array, trusts: (identity: Uint8Array) => boolean): Promise<Session | undefined> {
    const c = cryptoOf();
    const a = c.handshake;
    if (!a) return this.accept(payload, trusts);
    const f = readAccepted(payload, trusts);
    if (!f) return undefined;
    const { clientId, identity, serverEphemeral, signature } = f;
    const used = (name: string, v: unknown) => {
      if (v !== undefined && !this.asyncUsed.includes(name)) this.asyncUsed.push(name);
    };
    let th = await a.sha256(utf8Bytes("SPNH-v4"), this.core, payload.subarray(0, 10), payload.subarray(10, 91));
    used("SHA-256", th);
    th ??= transcriptHash(this.core, payload);
    let ok = await a.ed25519Verify(identity, th, signature);
    used("Ed25519", ok);
    ok ??= c.ed25519Verify(identity, th, signature);
    if (!ok) throw new HandshakeFailure("HandshakeAuthFailed", "the ConnectAccepted signature does not verify");
    if (clientId === 0) return undefined;
    const ss = await this.key.agree(serverEphemeral);
    if (!ss) return undefined; // a key the platform refuses (small order): treated as an all-zero secret
    if (ss.every((b) => b === 0)) return undefined;
    const s = await a.hkdfSha256(ss, th, utf8Bytes("spark-net-100 session v4"), 32);
    used("HKDF", s);
    if (!s) return deriveSession(clientId, identity, th, ss);
    const expand = async (label: string) => {
      const k = await a.hmacSha256(s, concat(utf8Bytes(label), Uint8Array.of(1)));
      used("HMAC", k);
      return k ?? hkdfExpand(s, label);
    };
    return { clientId, identity: identity.slice(), th, kc2s: await expand("spark-net-100 c2s"), ks2c: await expand("spark-net-100 s2c") };
  }
}

/**
 * ConnectAccepted's fields, read in §3.10 step 4's order: undefined to
 * ignore it (wrong size, version or suite); HandshakeFailure when the
 * identity is not the trusted one.
 */
function readAccepted(payload: Uint8Array, trusts: (identity: Uint8Array) => boolean) {
  if (payload.length !== ACCEPT_LEN) return undefined;
  const r = new Reader(payload);
  const clientId = r.u32();
  r.f32(); // server time
  if (r.u16() !== PROTOCOL_VERSION || r.u8() !== SUITE) return undefined;
  const identity = r.raw(32);
  const serverEphemeral = r.raw(32);
  r.raw(16); // server nonce
  const signature = r.raw(64);
  if (!trusts(identity)) throw new HandshakeFailure("ServerIdentityMismatch", `server identity ${pinOf(identity)} is not the pinned one`);
  return { clientId, identity, serverEphemeral, signature };
}

/** The outcome of a completed key agreement (§3.9). */
export interface Session {
  clientId: number;
  identity: Uint8Array;
  th: Uint8Array;
  kc2s: Uint8Array;
  ks2c: Uint8Array;
}

export class HandshakeFailure extends Error {
  constructor(readonly reason: string, detail: string) {
    super(`${reason}: ${detail}`);
    this.name = "HandshakeFailure";
  }
}

/** th = SHA-256("SPNH-v4" ‖ hello core ‖ accept prefix ‖ ServerHello bytes 0..80). */
export function transcriptHash(core: Uint8Array, accepted: Uint8Array): Uint8Array {
  return cryptoOf().sha256(utf8Bytes("SPNH-v4"), core, accepted.subarray(0, 10), accepted.subarray(10, 91));
}

export function deriveSession(clientId: number, identity: Uint8Array, th: Uint8Array, ss: Uint8Array): Session {
  const s = cryptoOf().hkdfSha256(ss, th, utf8Bytes("spark-net-100 session v4"), 32);
  return {
    clientId,
    identity: identity.slice(),
    th,
    kc2s: hkdfExpand(s, "spark-net-100 c2s"),
    ks2c: hkdfExpand(s, "spark-net-100 s2c"),
  };
}

/** HKDF-Expand (RFC 5869) for L = 32: one HMAC block. */
export function hkdfExpand(prk: Uint8Array, label: string): Uint8Array {
  return cryptoOf().hmacSha256(prk, concat(utf8Bytes(label), Uint8Array.of(1)));
}

/** A ConnectRejected payload (§3.11). */
export interface Rejection {
  reason: number;
  reasonName: string;
  serverVersion: number;
  detail: string;
}

export function parseRejected(payload: Uint8Array): Rejection {
  const r = new Reader(payload);
  const reason = r.u8();
  const serverVersion = r.u16();
  const detail = r.str(256);
  r.end();
  return { reason, reasonName: RejectReason[reason] ?? `reason ${reason}`, serverVersion, detail };
}

/** The pin of an identity key: "ed25519:" + base64url without padding (§8). */
export function pinOf(identity: Uint8Array): string {
  return "ed25519:" + b64url(identity);
}

/** Parses a pin into its 32-byte key, or throws. */
export function parsePin(pin: string): Uint8Array {
  const m = /^ed25519:([A-Za-z0-9_-]{43})$/.exec(pin);
  if (!m) throw new Error(`not a pin (ed25519: and 43 base64url characters): ${JSON.stringify(pin)}`);
  const key = fromB64url(m[1]);
  if (key.length !== 32 || b64url(key) !== m[1]) throw new Error("pin is not a canonical 32-byte key");
  return key;
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

export function b64url(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 3) {
    const n = (b[i] << 16) | ((b[i + 1] ?? 0) << 8) | (b[i + 2] ?? 0);
    const chars = i + 2 < b.length ? 4 : i + 1 < b.length ? 3 : 2;
    for (let j = 0; j < chars; j++) s += B64[(n >> (18 - 6 * j)) & 63];
  }
  return s;
}

export function fromB64url(s: string): Uint8Array {
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const c of s) {
    const v = B64.indexOf(c);
    if (v < 0) throw new Error("bad base64url");
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push((acc >> bits) & 0xff);
    }
  }
  return Uint8Array.from(out);
}
