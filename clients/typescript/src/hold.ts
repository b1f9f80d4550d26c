// The hold of reliable module messages that overtook the announcement of
// their type (docs/protocol.md §10.2, with the bounded queue of §10.3).
//
// ModuleSchemas and module messages both travel on channels that do not
// order, so when the datagram carrying an announcement is lost, a module
// message queued after it can arrive first. A client acknowledges such a
// message and holds it, in arrival order, for up to 3 s: once a table that
// names its type is adopted it is checked against that rule and delivered;
// if none comes in time, or the queue is full, it is refused NotLoaded.

import { Channel } from "./body";

/** Bounds of the queue (§10.3) and the hold time of §10.2. */
export const HOLD_MAX_MESSAGES = 64;
export const HOLD_MAX_BYTES = 64 * 1024;
export const HOLD_UNANNOUNCED_MS = 3000;

/** A held message, with its reliability sequence for a MessageRefused notice. */
export interface HeldMessage {
  type: number;
  channel: Channel;
  sequence: number;
  payload: Uint8Array;
  /** When it arrived, ms. */
  at: number;
}

export class HoldQueue {
  private q: HeldMessage[] = [];
  private held = 0;

  constructor(
    readonly holdMs = HOLD_UNANNOUNCED_MS,
    readonly maxMessages = HOLD_MAX_MESSAGES,
    readonly maxBytes = HOLD_MAX_BYTES,
  ) {}

  /** Messages held now. */
  get length(): number {
    return this.q.length;
  }

  /** Payload bytes held now. */
  get bytes(): number {
    return this.held;
  }

  /**
   * Keeps a copy of a message; false when it does not fit the queue (the
   * caller refuses it NotLoaded at once).
   */
  hold(m: HeldMessage): boolean {
    if (this.q.length >= this.maxMessages || this.held + m.payload.length > this.maxBytes) return false;
    this.q.push({ ...m, payload: m.payload.slice() });
    this.held += m.payload.length;
    return true;
  }

  /**
   * Hands over the held messages in arrival order: one whose type is named
   * now goes to deliver, one that waited its hold time out goes to expire,
   * and the first that must wait longer stops the walk (a held message is
   * never delivered before one held earlier). The callbacks may hold new
   * messages; those wait for the next call.
   */
  release(now: number, named: (type: number) => boolean, deliver: (m: HeldMessage) => void, expire: (m: HeldMessage) => void): void {
    const batch = this.q;
    let n = 0;
    for (; n < batch.length; n++) {
      const m = batch[n];
      if (!named(m.type) && now - m.at < this.holdMs) break;
    }
    if (n === 0) return;
    const out = batch.slice(0, n);
    this.q = batch.slice(n);
    for (const m of out) this.held -= m.payload.length;
    for (const m of out) {
      if (named(m.type)) deliver(m);
      else expire(m);
    }
  }

  /** Forgets everything (the session ended). */
  clear(): void {
    this.q = [];
    this.held = 0;
  }
}
