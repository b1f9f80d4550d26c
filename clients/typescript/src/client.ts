// A sparkhost protocol v4 client for Node.js and browsers, written from docs/protocol.md:
// the handshake (§3.10), sealed frames (§4), packed bodies (§5.1),
// reliability with acknowledgements, ordering and fragmentation (§5.3, §5.4),
// refusals (§5.6), heartbeats and close (§6), and the ModuleSchemas table
// (§10.2) with the hold of module messages that overtook it. Everything received is checked before it is used; whatever does
// not parse is dropped and counted, never thrown out of the receive loop.

import { Reader, Writer, WireError, MAX_PAYLOAD, uvarintLen, utf8Bytes } from "./wire";
import {
  ClientHandshake, HandshakeFailure, Session, parsePacket, parseRejected, parsePin, pinOf,
  FRAME_PLAIN, FRAME_SEALED, T_CONNECT, T_CONNECT_ACCEPTED, T_CONNECT_REJECTED, T_COOKIE_REPLY,
} from "./handshake";
import { Sealer, Opener, SEAL_OVERHEAD } from "./seal";
import { Channel, Record, parseBody, recordHeaderLen, writeRecord } from "./body";
import { MessageSchema, ModuleProtocols, ModuleSchemas, RefuseReason, checkFromServer, fieldLayout, parseModuleProtocols, parseModuleSchemas, BUILTIN_CLIENT_TYPES } from "./schemas";
import { HoldQueue } from "./hold";
import { GameStateSync, parseGameStateSync } from "./gamestate";
import { Transport, cryptoOf, debug, now, openDefaultTransport } from "./platform";

// Message types the runtime handles itself (§9).
const T_DISCONNECT = 4;
const T_HEARTBEAT = 5;
const T_ACK = 6;
const T_GAME_STATE_SYNC = 14;
const T_MESSAGE_REFUSED = 20;
const T_MODULE_SCHEMAS = 21;
const T_MODULE_PROTOCOLS = 22;

/** Disconnect reasons (§6). */
export const DisconnectReason: { [code: number]: string } = {
  0: "Unknown", 1: "ClientQuit", 2: "ServerShutdown", 3: "Kicked", 4: "Banned", 5: "Timeout",
  6: "ProtocolError", 7: "ReliableDeliveryFailed", 8: "KeyExhausted", 9: "NameInvalid",
  10: "RateLimited", 11: "ModuleFailure", 12: "ServerFull", 13: "AddressLimit",
};

// Timers and bounds (§3.10, §5.3–§5.5, §6).
const HELLO_RESEND_MS = 500;
const MAX_HELLO_RESENDS = 10;
const MAX_COOKIE_REPLIES = 8;
const HEARTBEAT_MS = 1000;
const LIVENESS_MS = 10000;
const ACK_DELAY_MS = 10;
const ACK_AT_ONCE = 16;
const SERVICE_MS = 10;
const FLUSH_DELAY_MS = 2;
const RTO_INITIAL = 500;
const RTO_MIN = 50;
const RTO_MAX = 1000;
// The longest wait between transmissions of a reliable packet (§5.4).
const MAX_RETRANSMIT_WAIT_MS = 1000;
const SEND_WINDOW = 256;
const SEND_QUEUE = 4096;
const RECV_WINDOW = 1024;
const ORDERED_AHEAD = 256;
const REASSEMBLY_BYTES = 4 * MAX_PAYLOAD;
const REASSEMBLY_TIMEOUT_MS = 20000;
const UNRELIABLE_QUEUE_BYTES = 1 << 20;
const NOTICE_BURST = 10;
const NOTICE_INTERVAL_MS = 100;

export interface ClientOptions {
  /** Server address (IPv4 or IPv6 literal) and port. */
  host: string;
  port: number;
  /** The player name sent in ClientFinished (the server's rule: 1..32 bytes, no control characters). */
  name: string;
  /** The server's identity pin, "ed25519:…" (§8). Either pin or verifyIdentity is required. */
  pin?: string;
  /** Decides on the server's identity pin when no fixed pin is given (e.g. a known_hosts file). */
  verifyIdentity?: (pin: string) => boolean;
  /** Computes an admission ticket (≤ 256 bytes) from the session's th (§3.13). */
  ticket?: (th: Uint8Array) => Uint8Array;
  /** The module types this client knows (generated code's SCHEMAS); the server's announcement fills the rest. */
  schemas?: MessageSchema[];
  /** UDP payload bytes per datagram (§5.5), 1200..65507; 1200 by default. */
  datagramSize?: number;
  /**
   * The datagram path to the server; by default the platform's (Node: a UDP
   * socket to host:port). Browsers pass a WebTransport or WebSocket one
   * (connectWeb does). The client packs into min(datagramSize, its maxDatagram).
   */
  transport?: () => Promise<Transport>;
}

/** A message received from the server, after its schema check. */
export interface Message {
  type: number;
  channel: Channel;
  payload: Uint8Array;
}

export interface CloseInfo {
  reason: number;
  reasonName: string;
  detail: string;
  /** True when the server sent the Disconnect; false when this side closed. */
  byServer: boolean;
}

export interface ClientStats {
  datagramsSent: number;
  datagramsReceived: number;
  messagesSent: number;
  messagesReceived: number;
  malformedDropped: number;
  securityDrops: number;
  ignored: number;
  messagesRefused: number;
  refusedByPeer: number;
  noticesSent: number;
  retransmissions: number;
  /** Reliable module messages held for an announcement of their type (§10.2). */
  heldUnannounced: number;
  /** Held messages delivered once an announcement named their type. */
  heldDelivered: number;
  /** Round-trip time of the last answered heartbeat, ms (-1 until one is answered). */
  pingMs: number;
}

interface Outgoing {
  rec: Record;
  sentAt: number; // ms of the last send; -1 before the first
  firstSentAt: number;
  retransmits: number;
  deadline: number;
  // The last send was made LIVENESS_MS or more after the first: if its
  // wait ends unacknowledged, the session fails (§5.4, "Giving up").
  last: boolean;
}

interface Reassembly {
  type: number;
  channel: Channel;
  count: number;
  orderedSequence: number;
  parts: (Uint8Array | undefined)[];
  got: number;
  bytes: number;
  inconsistent: boolean;
  lastAt: number;
}

type Held = Message | null; // null: a refused or abandoned message keeps its ordered turn

export class ClientError extends Error {
  constructor(readonly reason: string, detail: string) {
    super(`${reason}: ${detail}`);
    this.name = "ClientError";
  }
}

export class Client {
  /** The id the server assigned. */
  readonly id: number;
  /** The session's transcript hash (its channel binding, §3.13, §13.7). */
  readonly th: Uint8Array;
  /** The server's identity pin. */
  readonly serverPin: string;
  /**
   * Which handshake primitives came from the platform's asynchronous crypto
   * ("async: X25519 SHA-256 Ed25519 HKDF HMAC" with a browser's WebCrypto),
   * or "sync" (node:crypto, or a browser without them in WebCrypto).
   */
  handshakeCrypto = "sync";
  /** The admission's GameStateSync header and entity types. */
  gameState: GameStateSync | undefined;
  /** The highest-revision ModuleSchemas announcement received (§10.2). */
  moduleSchemas: ModuleSchemas | undefined;
  /** The highest-revision ModuleProtocols announcement received (§10.4). */
  moduleProtocols: ModuleProtocols | undefined;

  /** Called for every message delivered (module messages and the built-in types the runtime does not consume). */
  onMessage: ((m: Message) => void) | undefined;
  /** Called when a newer ModuleSchemas announcement arrives. */
  onSchemas: ((s: ModuleSchemas) => void) | undefined;
  /** Called with the server's MessageRefused notices (type, channel, reason). */
  onRefused: ((type: number, channel: number, reason: number) => void) | undefined;
  /** Called once when the session ends. */
  onClose: ((info: CloseInfo) => void) | undefined;

  readonly stats: ClientStats = {
    datagramsSent: 0, datagramsReceived: 0, messagesSent: 0, messagesReceived: 0,
    malformedDropped: 0, securityDrops: 0, ignored: 0, messagesRefused: 0, refusedByPeer: 0,
    noticesSent: 0, retransmissions: 0, heldUnannounced: 0, heldDelivered: 0, pingMs: -1,
  };

  private readonly sealer: Sealer;
  private readonly opener: Opener;
  private readonly datagramSize: number;
  private readonly known = new Map<number, MessageSchema>();
  private announced = new Map<number, MessageSchema>();
  private closedInfo: CloseInfo | undefined;
  private readonly closeWaiters: ((c: CloseInfo) => void)[] = [];
  private admitted = false;
  private admission: { resolve: () => void; reject: (e: Error) => void } | undefined;
  private service: ReturnType<typeof setInterval> | undefined;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;

  // Send side.
  private nextReliable = 1;
  private nextOrdered = 1;
  private nextUnreliable = 1;
  private readonly inflight = new Map<number, Outgoing>();
  private readonly waiting: Outgoing[] = [];
  private unreliableQueue: { type: number; payload: Uint8Array }[] = [];
  private unreliableBytes = 0;
  private srtt = -1;
  private rttvar = 0;
  private rto = RTO_INITIAL;

  // Receive side.
  private floor = 0; // every reliable sequence ≤ floor was received
  private readonly above = new Set<number>();
  private highest = 0;
  private highestAt = 0;
  private ackDirty = false;
  private ackDue = 0; // ms; 0 none
  private ackRepeat = 0; // ms; 0 none
  private pendingAcks = 0;
  private readonly soloAcks: number[] = [];
  private nextDeliver = 1;
  private readonly held = new Map<number, Held>();
  private readonly reassembly = new Map<number, Reassembly>();
  private reassemblyBytes = 0;
  private readonly unannounced = new HoldQueue();

  // Liveness.
  private lastHeard = now();
  private nextHeartbeat = 0;
  private heartbeatToken = 0;
  private heartbeatSentAt = 0;
  private noticeTokens = NOTICE_BURST;
  private noticeRefill = now();
  private noticeSuppressed = 0;

  private constructor(private readonly socket: Transport, private readonly opts: ClientOptions, session: Session) {
    this.id = session.clientId;
    this.th = session.th;
    this.serverPin = pinOf(session.identity);
    this.sealer = new Sealer(session.kc2s, now);
    this.opener = new Opener(session.ks2c, now);
    this.datagramSize = Math.min(opts.datagramSize ?? 1200, socket.maxDatagram ?? 65507);
    for (const s of opts.schemas ?? []) this.known.set(s.id, s);
  }

  /** Checks the schemas given in ClientOptions (generated code's, or hand-written ones). */
  private static checkOwnSchemas(schemas: MessageSchema[]): void {
    const ids = new Set<number>();
    for (const s of schemas) {
      const what = `ClientOptions.schemas: ${s.name} (${s.id})`;
      if (!Number.isInteger(s.id) || s.id < 1000 || s.id > 0xffff || ids.has(s.id)) throw new Error(`${what}: module ids are 1000..65535, each once`);
      ids.add(s.id);
      if (![1, 2, 3].includes(s.direction) || ![0, 1, 2].includes(s.channel)) throw new Error(`${what}: bad direction or channel`);
      if (!Number.isInteger(s.minLen) || !Number.isInteger(s.maxLen) || s.minLen < 0 || s.minLen > s.maxLen || s.maxLen > MAX_PAYLOAD) throw new Error(`${what}: bad lengths`);
      if (s.stringOffset !== 0xffffffff && (!Number.isInteger(s.stringOffset) || s.stringOffset < 0 || s.stringOffset + 2 > s.maxLen)) throw new Error(`${what}: bad stringOffset`);
      if (s.fields !== undefined) {
        const l = fieldLayout(s.fields);
        if (l.minLen !== s.minLen || l.maxLen !== s.maxLen || l.stringOffset !== s.stringOffset) throw new Error(`${what}: sizes are not the ones its fields imply (${l.minLen}..${l.maxLen})`);
      }
    }
  }

  /**
   * Connects: the v4 handshake with its cookie round trip, the identity
   * check, ClientFinished, and admission (the first GameStateSync). Rejects
   * with a ClientError naming the reason on refusal, failure or silence.
   */
  static connect(opts: ClientOptions): Promise<Client> {
    const size = opts.datagramSize ?? 1200;
    if (!Number.isInteger(size) || size < 1200 || size > 65507) return Promise.reject(new Error("datagramSize must be 1200..65507"));
    let trusts: (identity: Uint8Array) => boolean;
    if (opts.pin !== undefined) {
      let pinned: Uint8Array;
      try {
        pinned = parsePin(opts.pin);
      } catch (e) {
        return Promise.reject(e);
      }
      trusts = (id) => id.length === 32 && id.every((b, i) => b === pinned[i]);
    } else if (opts.verifyIdentity) {
      const verify = opts.verifyIdentity;
      trusts = (id) => verify(pinOf(id));
    } else {
      return Promise.reject(new Error("a pin or a verifyIdentity function is required (docs/protocol.md §8)"));
    }
    try {
      Client.checkOwnSchemas(opts.schemas ?? []);
    } catch (e) {
      return Promise.reject(e);
    }
    const nameBytes = utf8Bytes(opts.name);
    if (nameBytes.length > 64) return Promise.reject(new Error("name longer than 64 bytes"));

    const open = opts.transport ?? (() => openDefaultTransport(opts.host, opts.port));
    return open().then((socket) => Client.handshake(socket, opts, trusts, nameBytes));
  }

  /** The transport is open: the handshake over it. */
  private static async handshake(socket: Transport, opts: ClientOptions, trusts: (identity: Uint8Array) => boolean, nameBytes: Uint8Array): Promise<Client> {
    let hs: ClientHandshake;
    try {
      hs = await ClientHandshake.create();
    } catch (e) {
      socket.close();
      throw e;
    }
    return new Promise<Client>((resolve, reject) => {
      let client: Client | undefined;
      let resends = 0;
      let cookieReplies = 0;
      let timer: ReturnType<typeof setTimeout> | undefined;
      let done = false;
      const fail = (e: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (client) client.shutdown({ reason: 0, reasonName: "Unknown", detail: e.message, byServer: false });
        else socket.close();
        reject(e);
      };
      const sendHello = () => {
        socket.send(hs.helloDatagram());
        clearTimeout(timer);
        timer = setTimeout(() => {
          if (client) return;
          if (resends >= MAX_HELLO_RESENDS) {
            fail(new ClientError("NoAnswer", `no answer from ${opts.host}:${opts.port} to ${resends + 1} hellos`));
            return;
          }
          resends++;
          sendHello();
        }, HELLO_RESEND_MS);
      };
      socket.onError((e: Error) => {
        if (client && client.admitted) client.shutdown({ reason: 0, reasonName: "Unknown", detail: `transport: ${e.message}`, byServer: false });
        else fail(e);
      });
      socket.onDatagram((msg: Uint8Array) => {
        if (client) {
          client.receive(msg);
          return;
        }
        if (done || msg.length < 1 || msg[0] !== FRAME_PLAIN) return;
        let pkt;
        try {
          pkt = parsePacket(msg.subarray(1));
        } catch {
          return;
        }
        if (pkt.senderId !== 0 || pkt.channel !== 0) return;
        try {
          if (pkt.type === T_COOKIE_REPLY) {
            if (cookieReplies >= MAX_COOKIE_REPLIES || !hs.acceptCookieReply(pkt.payload)) return;
            cookieReplies++;
            sendHello(); // the hello echoing a cookie is a send, not a resend
          } else if (pkt.type === T_CONNECT_ACCEPTED) {
            // Checked asynchronously where the platform's crypto is (WebCrypto);
            // the first that yields a session wins.
            hs.acceptAsync(pkt.payload, trusts).then((session) => {
              if (!session || client || done) return;
              clearTimeout(timer);
              const c = new Client(socket, opts, session);
              c.handshakeCrypto = hs.asyncUsed.length > 0 ? `async: ${hs.asyncUsed.join(" ")}` : "sync";
              client = c;
              c.admission = { resolve: () => { done = true; resolve(c); }, reject: fail };
              c.start(nameBytes);
            }, (e) => {
              if (e instanceof HandshakeFailure) fail(new ClientError(e.reason, e.message));
            });
          } else if (pkt.type === T_CONNECT_REJECTED) {
            const rej = parseRejected(pkt.payload);
            fail(new ClientError(rej.reasonName, `server refused (server_version ${rej.serverVersion}): ${rej.detail}`));
          }
        } catch (e) {
          if (e instanceof HandshakeFailure) fail(new ClientError(e.reason, e.message));
          // Anything else is a malformed answer: ignored, keep waiting.
        }
      });
      sendHello();
    });
  }

  /** Queues a message for the server; flushed within 2 ms. Throws on a bad size or a full queue. */
  send(type: number, channel: Channel, payload: Uint8Array): void {
    if (this.closedInfo) throw new ClientError("Closed", "the session is closed");
    if (!this.admitted) throw new ClientError("NotAdmitted", "not admitted yet");
    if (!Number.isInteger(type) || type < 1 || type > 0xffff) throw new Error(`bad message type ${type}`);
    if (channel !== Channel.Unreliable && channel !== Channel.Reliable && channel !== Channel.ReliableOrdered) throw new Error(`bad channel ${channel}`);
    if (payload.length > MAX_PAYLOAD) throw new Error(`payload of ${payload.length} bytes, at most ${MAX_PAYLOAD}`);
    if (type >= 1000) {
      const s = this.schemaOf(type);
      if (s) {
        if (s.direction === 2) throw new Error(`${s.name} (${type}) is sent by the server only`);
        if (s.channel !== channel) throw new Error(`${s.name} (${type}) travels on channel ${s.channel}`);
        if (payload.length < s.minLen || payload.length > s.maxLen) throw new Error(`${s.name} (${type}) takes ${s.minLen}..${s.maxLen} bytes, not ${payload.length}`);
      }
    } else if (BUILTIN_CLIENT_TYPES[type] === undefined) {
      throw new Error(`type ${type} is not one a client sends`);
    } else if (BUILTIN_CLIENT_TYPES[type] !== channel) {
      throw new Error(`type ${type} travels on channel ${BUILTIN_CLIENT_TYPES[type]}`);
    }
    if (channel === Channel.Unreliable) this.queueUnreliable(type, payload);
    else this.queueReliable(type, channel, payload);
    this.scheduleFlush();
  }

  /** Resolves with the next delivered message that matches, or rejects after timeoutMs. */
  waitFor(match: (m: Message) => boolean, timeoutMs = 10000): Promise<Message> {
    return new Promise((resolve, reject) => {
      const prev = this.onMessage;
      const restore = () => { this.onMessage = prev; };
      const t = setTimeout(() => { restore(); reject(new ClientError("Timeout", `no matching message within ${timeoutMs} ms`)); }, timeoutMs);
      this.onMessage = (m) => {
        if (prev) prev(m);
        if (match(m)) {
          clearTimeout(t);
          restore();
          resolve(m);
        }
      };
    });
  }

  /** The schema of a module type: the client's own, else the server's announcement. */
  schemaOf(type: number): MessageSchema | undefined {
    return this.known.get(type) ?? this.announced.get(type);
  }

  /** Resolves when the session has ended. */
  closed(): Promise<CloseInfo> {
    if (this.closedInfo) return Promise.resolve(this.closedInfo);
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  /** Disconnects cleanly: Disconnect(ClientQuit) sealed three times (§6), then the socket closes. */
  close(detail = ""): Promise<CloseInfo> {
    if (!this.closedInfo) {
      this.sendDisconnect(1, detail);
      this.shutdown({ reason: 1, reasonName: "ClientQuit", detail, byServer: false });
    }
    return this.closed();
  }

  // ---- session start and timers ----

  private start(name: Uint8Array): void {
    const w = new Writer();
    w.u16(name.length).raw(name);
    const ticket = this.opts.ticket ? this.opts.ticket(this.th) : new Uint8Array(0);
    if (ticket.length > 256) {
      this.admission!.reject(new Error("ticket longer than 256 bytes"));
      return;
    }
    w.u16(ticket.length).raw(ticket);
    // ClientFinished: type 1, Reliable, Sequence 1, alone in its datagram (§3.7).
    this.queueReliable(T_CONNECT, Channel.Reliable, w.bytesOut());
    this.flush();
    this.service = setInterval(() => this.tick(), SERVICE_MS);
  }

  private tick(): void {
    if (this.closedInfo) return;
    const t = now();
    if (t - this.lastHeard > LIVENESS_MS) {
      this.fail(5, "nothing heard from the server for 10 s", false);
      return;
    }
    if (this.admitted && t >= this.nextHeartbeat) {
      this.nextHeartbeat = t + HEARTBEAT_MS;
      this.heartbeatToken = (cryptoOf().randomBytes(1)[0] | 1) * 0x1000000 + (t & 0xffffff); // nonzero
      this.heartbeatToken >>>= 0;
      if (this.heartbeatToken === 0) this.heartbeatToken = 1;
      this.heartbeatSentAt = t;
      this.queueUnreliable(T_HEARTBEAT, new Writer().u32(this.heartbeatToken).u32(0).bytesOut());
    }
    this.releaseHeld(t);
    if (this.closedInfo) return;
    for (const [first, m] of this.reassembly) {
      if (t - m.lastAt >= REASSEMBLY_TIMEOUT_MS) {
        this.dropReassembly(first, m);
        this.refuse(m.type, m.channel, first, RefuseReason.Incomplete);
        if (m.channel === Channel.ReliableOrdered) this.deliverInTurn(m.orderedSequence, null);
      }
    }
    for (const o of this.inflight.values()) {
      // Retried until a send made a connection timeout after the first
      // goes unanswered (§5.4): an outage shorter than the liveness
      // timeout does not end the session here, whatever the RTO.
      if (o.last && t >= o.deadline) {
        this.fail(7, `reliable message ${o.rec.sequence} (type ${o.rec.type}) was not acknowledged`, true);
        return;
      }
    }
    this.flush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer !== undefined) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.flush();
    }, FLUSH_DELAY_MS);
  }

  // ---- sending ----

  private queueUnreliable(type: number, payload: Uint8Array): void {
    const limit = this.datagramSize - 32 - 1 - uvarintLen(type) - uvarintLen(payload.length);
    if (payload.length > limit) throw new Error(`an unreliable message takes at most ${limit} bytes, not ${payload.length}`);
    if (this.unreliableBytes + payload.length > UNRELIABLE_QUEUE_BYTES) throw new ClientError("QueueFull", "unreliable send queue full (1 MiB)");
    this.unreliableQueue.push({ type, payload });
    this.unreliableBytes += payload.length;
  }

  private queueReliable(type: number, channel: Channel, payload: Uint8Array): void {
    const f = this.datagramSize - 51;
    const count = payload.length > f ? Math.ceil(payload.length / f) : 1;
    if (this.waiting.length + count > SEND_QUEUE) throw new ClientError("QueueFull", "reliable send queue full");
    const ordered = channel === Channel.ReliableOrdered ? this.nextOrdered++ : 0;
    for (let i = 0; i < count; i++) {
      const rec: Record = {
        type, channel, sequence: this.nextReliable++, orderedSequence: ordered,
        fragIndex: count > 1 ? i : 0, fragCount: count > 1 ? count : 0,
        payload: count > 1 ? payload.subarray(i * f, Math.min((i + 1) * f, payload.length)) : payload,
      };
      this.waiting.push({ rec, sentAt: -1, firstSentAt: -1, retransmits: 0, deadline: 0, last: false });
    }
  }

  private lowestUnacked(): number {
    let low = this.nextReliable;
    for (const s of this.inflight.keys()) if (s < low) low = s;
    return low;
  }

  /** Packs what is due into datagrams of at most datagramSize bytes and sends them (§5.5). */
  private flush(): void {
    if (this.closedInfo) return;
    const t = now();
    const reliable: Outgoing[] = [];
    for (const o of this.inflight.values()) if (t >= o.deadline) reliable.push(o);
    reliable.sort((a, b) => a.rec.sequence - b.rec.sequence);
    const low = this.lowestUnacked();
    while (this.waiting.length > 0 && this.waiting[0].rec.sequence - low < SEND_WINDOW) reliable.push(this.waiting.shift()!);

    const unreliable: { type: number; payload: Uint8Array }[] = [];
    for (const seq of this.soloAcks.splice(0)) unreliable.push({ type: T_ACK, payload: this.ackPayload(seq, t) });
    const ackNeeded = this.highest > 0 && ((this.ackDue && t >= this.ackDue) || (this.ackRepeat && t >= this.ackRepeat));
    unreliable.push(...this.unreliableQueue.splice(0));
    this.unreliableBytes = 0;
    // In v4 any datagram sent anyway carries the acknowledgements owed.
    if (this.highest > 0 && (ackNeeded || (this.ackDirty && (reliable.length > 0 || unreliable.length > 0)))) {
      unreliable.push({ type: T_ACK, payload: this.ackPayload(this.highest, t) });
      this.ackRepeat = this.ackDirty ? t + ACK_DELAY_MS : 0;
      this.ackDirty = false;
      this.ackDue = 0;
      this.pendingAcks = 0;
    }
    if (reliable.length === 0 && unreliable.length === 0) return;

    const bodyLimit = this.datagramSize - SEAL_OVERHEAD;
    let records: Record[] = [];
    let base = this.nextUnreliable;
    let size = uvarintLen(base);
    const emit = () => {
      if (records.length === 0) return;
      const w = new Writer();
      w.uvarint(base);
      for (const r of records) writeRecord(w, r);
      this.sendSealed(w.bytesOut());
      this.stats.messagesSent += records.length;
      records = [];
      base = this.nextUnreliable;
      size = uvarintLen(base);
    };
    const add = (rec: Record) => {
      const need = recordHeaderLen(rec) + rec.payload.length;
      if (records.length > 0 && size + need > bodyLimit) emit();
      // Unreliable records follow the reliable ones, so a datagram's first
      // unreliable record has Sequence base, the next base + 1, ... (§5.1).
      if (rec.channel === Channel.Unreliable) rec.sequence = this.nextUnreliable++;
      records.push(rec);
      size += need;
    };
    for (const o of reliable) {
      if (o.sentAt >= 0) {
        o.retransmits++;
        this.stats.retransmissions++;
      } else {
        o.firstSentAt = t;
        this.inflight.set(o.rec.sequence, o);
      }
      o.sentAt = t;
      o.deadline = t + Math.min(this.rto * Math.min(2 ** o.retransmits, 8), MAX_RETRANSMIT_WAIT_MS);
      o.last = t - o.firstSentAt >= LIVENESS_MS;
      add(o.rec);
    }
    for (const u of unreliable) {
      add({ type: u.type, channel: Channel.Unreliable, sequence: 0, orderedSequence: 0, fragIndex: 0, fragCount: 0, payload: u.payload });
    }
    emit();
  }

  private sendSealed(body: Uint8Array): void {
    if (this.sealer.exhausted()) {
      this.fail(8, "key epochs exhausted", true);
      return;
    }
    this.write(this.sealer.seal(body));
  }

  /** Writes one datagram; the socket closes only once every write has completed. */
  private write(datagram: Uint8Array): void {
    this.writesPending++;
    this.stats.datagramsSent++;
    this.socket.send(datagram, () => {
      this.writesPending--;
      if (this.writesPending === 0 && this.socketCloseWanted) this.closeSocket();
    });
  }

  private writesPending = 0;
  private socketCloseWanted = false;
  private socketClosed = false;

  private closeSocket(): void {
    if (this.socketClosed) return;
    this.socketClosed = true;
    this.socket.close();
  }

  private ackPayload(ack: number, t: number): Uint8Array {
    let bits = 0;
    for (let i = 0; i < 32; i++) {
      const s = ack - 1 - i;
      if (s >= 1 && this.wasReceived(s)) bits |= 1 << i;
    }
    const delay = ack === this.highest ? Math.min(0xffff, Math.max(0, t - this.highestAt)) : 0;
    return new Writer().u32(ack).u32(bits >>> 0).u16(delay).bytesOut();
  }

  private sendDisconnect(reason: number, detail: string): void {
    try {
      const w = new Writer();
      w.u8(reason).str(detail.slice(0, 256), 256);
      const rec: Record = { type: T_DISCONNECT, channel: Channel.Unreliable, sequence: 0, orderedSequence: 0, fragIndex: 0, fragCount: 0, payload: w.bytesOut() };
      const b = new Writer();
      b.uvarint(this.nextUnreliable++);
      writeRecord(b, rec);
      const body = b.bytesOut();
      // One packet sealed three times (§6): the same body under three frame sequences.
      for (let i = 0; i < 3; i++) this.write(this.sealer.seal(body));
    } catch {
      // A detail that does not encode is not worth failing the close for.
    }
  }

  private refuse(type: number, channel: Channel, sequence: number, reason: RefuseReason): void {
    this.stats.messagesRefused++;
    if (type === T_MESSAGE_REFUSED || this.closedInfo) return; // a notice is never answered with a notice
    const t = now();
    this.noticeTokens = Math.min(NOTICE_BURST, this.noticeTokens + (t - this.noticeRefill) / NOTICE_INTERVAL_MS);
    this.noticeRefill = t;
    if (this.noticeTokens < 1) {
      this.noticeSuppressed++;
      return;
    }
    this.noticeTokens--;
    const w = new Writer();
    w.u16(type).u8(channel).u8(reason).u32(channel === Channel.Unreliable ? 0 : sequence).u32(this.noticeSuppressed);
    this.noticeSuppressed = 0;
    this.stats.noticesSent++;
    this.queueUnreliable(T_MESSAGE_REFUSED, w.bytesOut());
    this.scheduleFlush();
  }

  // ---- receiving ----

  /** Handles one datagram from the server's endpoint. Never throws. */
  private receive(msg: Uint8Array): void {
    if (this.closedInfo) return;
    this.stats.datagramsReceived++;
    if (msg.length < 1 || msg[0] !== FRAME_SEALED) {
      this.stats.ignored++; // a late plain handshake frame, or noise
      return;
    }
    let records: Record[];
    try {
      const body = this.opener.open(msg);
      this.lastHeard = now();
      try {
        records = parseBody(body);
      } catch {
        this.stats.malformedDropped++;
        return;
      }
    } catch {
      this.stats.securityDrops++;
      return;
    }
    try {
      for (const rec of records) {
        if (this.closedInfo) return;
        this.stats.messagesReceived++;
        this.record(rec);
      }
      if (this.pendingAcks >= ACK_AT_ONCE || this.soloAcks.length > 0) this.ackDue = now();
      if (this.ackDue && now() >= this.ackDue) this.flush();
    } catch (e) {
      // A bug in a handler must not stop the receive loop.
      this.stats.malformedDropped++;
      debug("sparkhost client: receive:", e);
    }
  }

  private wasReceived(s: number): boolean {
    return s <= this.floor || this.above.has(s);
  }

  private record(rec: Record): void {
    if (rec.channel === Channel.Unreliable) {
      this.deliver(rec.type, rec.channel, rec.sequence, rec.payload);
      return;
    }
    const seq = rec.sequence;
    const t = now();
    if (this.wasReceived(seq)) {
      this.ackDue = t; // duplicates are acked at once and not delivered
      this.ackDirty = true;
      return;
    }
    // Beyond the receiver's windows: left unacknowledged, the sender resends (§5.4).
    if (seq - (this.floor + 1) > RECV_WINDOW) return;
    if (rec.channel === Channel.ReliableOrdered && rec.orderedSequence - this.nextDeliver > ORDERED_AHEAD) return;
    const first = seq - rec.fragIndex;
    // A fragment past the reassembly bound waits for its resend, unless it is of the oldest message (§5.3).
    if (rec.fragCount > 0 && this.reassemblyBytes + rec.payload.length > REASSEMBLY_BYTES && first !== this.oldestReassembly(first)) return;
    // Received: acknowledged whatever happens to it next.
    this.above.add(seq);
    while (this.above.has(this.floor + 1)) this.above.delete(++this.floor);
    if (seq > this.highest) {
      this.highest = seq;
      this.highestAt = t;
    } else if (this.highest - seq > 32) {
      this.soloAcks.push(seq);
    }
    this.ackDirty = true;
    this.pendingAcks++;
    if (!this.ackDue) this.ackDue = t + ACK_DELAY_MS;

    if (rec.fragCount > 0) {
      this.fragment(first, rec, t);
      return;
    }
    if (rec.channel === Channel.ReliableOrdered) {
      this.deliverInTurn(rec.orderedSequence, { type: rec.type, channel: rec.channel, payload: rec.payload });
      this.lastSequence.set(rec.orderedSequence, seq);
    } else {
      this.deliver(rec.type, rec.channel, seq, rec.payload);
    }
  }

  private readonly lastSequence = new Map<number, number>(); // ordered sequence → reliability sequence, for notices

  private oldestReassembly(candidate: number): number {
    let low = candidate;
    for (const k of this.reassembly.keys()) if (k < low) low = k;
    return low;
  }

  private fragment(first: number, rec: Record, t: number): void {
    let m = this.reassembly.get(first);
    if (!m) {
      m = { type: rec.type, channel: rec.channel, count: rec.fragCount, orderedSequence: rec.orderedSequence, parts: new Array(rec.fragCount), got: 0, bytes: 0, inconsistent: false, lastAt: t };
      this.reassembly.set(first, m);
    }
    m.lastAt = t;
    m.got++;
    if (rec.type !== m.type || rec.channel !== m.channel || rec.fragCount !== m.count || rec.orderedSequence !== m.orderedSequence || rec.fragIndex >= m.count) {
      m.inconsistent = true; // acknowledged, not kept
    } else {
      m.parts[rec.fragIndex] = rec.payload.slice();
      m.bytes += rec.payload.length;
      this.reassemblyBytes += rec.payload.length;
    }
    if (m.got < m.count) return;
    this.dropReassembly(first, m);
    let reason: RefuseReason | undefined;
    let payload = new Uint8Array(0);
    if (m.inconsistent || m.parts.some((p) => p === undefined)) reason = RefuseReason.Inconsistent;
    else if (m.bytes > MAX_PAYLOAD) reason = RefuseReason.BadSize;
    else {
      payload = new Uint8Array(m.bytes);
      let off = 0;
      for (const p of m.parts) {
        payload.set(p!, off);
        off += p!.length;
      }
    }
    if (reason !== undefined) {
      this.refuse(m.type, m.channel, first, reason);
      if (m.channel === Channel.ReliableOrdered) this.deliverInTurn(m.orderedSequence, null);
      return;
    }
    if (m.channel === Channel.ReliableOrdered) {
      this.lastSequence.set(m.orderedSequence, first);
      this.deliverInTurn(m.orderedSequence, { type: m.type, channel: m.channel, payload });
    } else {
      this.deliver(m.type, m.channel, first, payload);
    }
  }

  private dropReassembly(first: number, m: Reassembly): void {
    this.reassembly.delete(first);
    this.reassemblyBytes -= m.bytes;
  }

  /** ReliableOrdered: hold until its turn, then deliver it with every held successor (§5.4). */
  private deliverInTurn(ordered: number, m: Held): void {
    if (ordered < this.nextDeliver || this.held.has(ordered)) return;
    this.held.set(ordered, m);
    while (this.held.has(this.nextDeliver)) {
      const next = this.held.get(this.nextDeliver)!;
      this.held.delete(this.nextDeliver);
      const seq = this.lastSequence.get(this.nextDeliver) ?? 0;
      this.lastSequence.delete(this.nextDeliver);
      this.nextDeliver++;
      if (next) this.deliver(next.type, next.channel, seq, next.payload);
      if (this.closedInfo) return;
    }
  }

  /** Applies the type's rule, then handles or hands over the message. */
  private deliver(type: number, channel: Channel, sequence: number, payload: Uint8Array): void {
    const reason = checkFromServer(type, channel, payload, (t) => this.schemaOf(t));
    if (reason === RefuseReason.UnknownType && type >= 1000 && channel !== Channel.Unreliable) {
      // It may have overtaken the announcement of its type (§10.2): held, already acknowledged.
      if (this.unannounced.hold({ type, channel, sequence, payload, at: now() })) this.stats.heldUnannounced++;
      else this.refuse(type, channel, sequence, RefuseReason.NotLoaded);
      return;
    }
    if (reason !== undefined) {
      this.refuse(type, channel, sequence, reason);
      return;
    }
    let adopted = false;
    try {
      switch (type) {
        case T_ACK:
          this.onAck(payload);
          return;
        case T_HEARTBEAT:
          this.onHeartbeat(payload);
          return;
        case T_DISCONNECT:
          this.onDisconnect(payload);
          return;
        case T_MESSAGE_REFUSED:
          this.onMessageRefused(payload);
          return;
        case T_MODULE_SCHEMAS:
          adopted = this.onModuleSchemas(payload);
          break;
        case T_MODULE_PROTOCOLS: {
          const p = parseModuleProtocols(payload);
          if (!this.moduleProtocols || p.revision > this.moduleProtocols.revision) this.moduleProtocols = p;
          break;
        }
        case T_GAME_STATE_SYNC:
          this.gameState = parseGameStateSync(payload);
          if (!this.admitted) {
            this.admitted = true;
            this.nextHeartbeat = now() + HEARTBEAT_MS;
            this.admission?.resolve();
            this.admission = undefined;
          }
          break; // also handed to the application
      }
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      this.refuse(type, channel, sequence, RefuseReason.Malformed);
      return;
    }
    if (type === T_MODULE_SCHEMAS) {
      if (adopted) this.releaseHeld(now()); // what waited for this table, after it
      return;
    }
    if (this.onMessage) this.onMessage({ type, channel, payload });
  }

  private onAck(payload: Uint8Array): void {
    const r = new Reader(payload);
    const ack = r.u32();
    const bits = r.u32();
    const delay = r.u16();
    const t = now();
    const top = this.inflight.get(ack);
    if (top && top.retransmits === 0) {
      // Karn's rule: only never-retransmitted packets are sampled.
      const sample = Math.max(1, t - top.sentAt - delay);
      if (this.srtt < 0) {
        this.srtt = sample;
        this.rttvar = sample / 2;
      } else {
        this.rttvar = 0.75 * this.rttvar + 0.25 * Math.abs(this.srtt - sample);
        this.srtt = 0.875 * this.srtt + 0.125 * sample;
      }
      this.rto = Math.min(RTO_MAX, Math.max(RTO_MIN, this.srtt + 4 * this.rttvar));
    }
    this.inflight.delete(ack);
    for (let i = 0; i < 32; i++) if (bits & (1 << i)) this.inflight.delete(ack - 1 - i);
    if (this.waiting.length > 0) this.scheduleFlush();
  }

  private onHeartbeat(payload: Uint8Array): void {
    const r = new Reader(payload);
    const token = r.u32();
    const echo = r.u32();
    if (token !== 0) {
      this.queueUnreliable(T_HEARTBEAT, new Writer().u32(0).u32(token).bytesOut());
      this.flush(); // answered at once
    }
    if (echo !== 0 && echo === this.heartbeatToken) {
      this.stats.pingMs = now() - this.heartbeatSentAt;
      this.heartbeatToken = 0;
    }
  }

  private onDisconnect(payload: Uint8Array): void {
    const r = new Reader(payload);
    const reason = r.u8();
    const detail = r.str(256);
    r.end();
    const info = { reason, reasonName: DisconnectReason[reason] ?? `reason ${reason}`, detail, byServer: true };
    if (!this.admitted && this.admission) {
      const adm = this.admission;
      this.admission = undefined;
      this.shutdown(info);
      adm.reject(new ClientError(info.reasonName, detail || "the server ended the admission"));
      return;
    }
    this.shutdown(info);
  }

  private onMessageRefused(payload: Uint8Array): void {
    const r = new Reader(payload);
    const type = r.u16();
    const channel = r.u8();
    const reason = r.u8();
    r.u32();
    const suppressed = r.u32();
    if (channel > 2) throw new WireError("MessageRefused channel");
    this.stats.refusedByPeer += 1 + suppressed;
    if (this.onRefused) this.onRefused(type, channel, reason);
  }

  /** Adopts an announcement newer than the table kept; reports whether it did. */
  private onModuleSchemas(payload: Uint8Array): boolean {
    const s = parseModuleSchemas(payload);
    if (this.moduleSchemas && s.revision <= this.moduleSchemas.revision) return false; // keep the highest revision
    this.moduleSchemas = s;
    this.announced = new Map(s.schemas.map((x) => [x.id, x]));
    if (this.onSchemas) this.onSchemas(s);
    return true;
  }

  /** Delivers the held messages whose type is named now; refuses those that waited 3 s (§10.2). */
  private releaseHeld(t: number): void {
    if (this.unannounced.length === 0 || this.closedInfo) return;
    this.unannounced.release(
      t,
      (type) => this.schemaOf(type) !== undefined,
      (m) => {
        if (this.closedInfo) return;
        if (checkFromServer(m.type, m.channel, m.payload, (x) => this.schemaOf(x)) === undefined) this.stats.heldDelivered++;
        this.deliver(m.type, m.channel, m.sequence, m.payload); // refuses it if it breaks the announced rule
      },
      (m) => this.refuse(m.type, m.channel, m.sequence, RefuseReason.NotLoaded),
    );
  }

  // ---- ending ----

  private fail(reason: number, detail: string, tell: boolean): void {
    if (this.closedInfo) return;
    if (tell) this.sendDisconnect(reason, detail);
    const info = { reason, reasonName: DisconnectReason[reason] ?? `reason ${reason}`, detail, byServer: false };
    const adm = this.admission;
    this.admission = undefined;
    this.shutdown(info);
    if (adm) adm.reject(new ClientError(info.reasonName, detail));
  }

  private shutdown(info: CloseInfo): void {
    if (this.closedInfo) return;
    this.closedInfo = info;
    this.unannounced.clear();
    clearInterval(this.service);
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    // dgram sends are asynchronous: closing now would discard the Disconnect.
    this.socketCloseWanted = true;
    if (this.writesPending === 0) this.closeSocket();
    if (this.onClose) this.onClose(info);
    for (const w of this.closeWaiters.splice(0)) w(info);
  }
}
