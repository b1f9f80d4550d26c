// Packed datagram bodies of a v4 session (docs/protocol.md §5.1, §5.2).

import { Reader, Writer, WireError, MAX_PAYLOAD, uvarintLen } from "./wire";

export enum Channel {
  Unreliable = 0,
  Reliable = 1,
  ReliableOrdered = 2,
}

const FLAG_FRAGMENT = 0x04;

/** One record of a body. */
export interface Record {
  type: number;
  channel: Channel;
  /** Reliability sequence (reliable channels); the implied Sequence for unreliable records. */
  sequence: number;
  /** ReliableOrdered only (0 otherwise). */
  orderedSequence: number;
  /** Fragment fields; fragCount 0 when the record is not a fragment. */
  fragIndex: number;
  fragCount: number;
  payload: Uint8Array;
}

/**
 * Parses a whole body and checks its structure before anything acts on it
 * (§5.2); any violation throws WireError and the datagram is dropped whole.
 */
export function parseBody(body: Uint8Array): Record[] {
  const r = new Reader(body);
  const base = r.uvarint();
  const out: Record[] = [];
  let unreliable = 0;
  while (r.remaining > 0) {
    const flags = r.u8();
    const channel = flags & 3;
    if (channel === 3 || (flags & 0xf8) !== 0) throw new WireError("bad record flags");
    const type = r.uvarint();
    if (type === 0 || type > 0xffff) throw new WireError("bad record type");
    let sequence = 0;
    let orderedSequence = 0;
    if (channel !== Channel.Unreliable) {
      sequence = r.uvarint();
      if (sequence === 0) throw new WireError("sequence 0");
      if (channel === Channel.ReliableOrdered) {
        orderedSequence = r.uvarint();
        if (orderedSequence === 0) throw new WireError("ordered_sequence 0");
      }
    }
    let fragIndex = 0;
    let fragCount = 0;
    if (flags & FLAG_FRAGMENT) {
      if (channel === Channel.Unreliable) throw new WireError("unreliable fragment");
      fragIndex = r.u8();
      fragCount = r.u8();
      if (fragCount < 2 || fragCount > 64 || fragIndex >= fragCount || sequence <= fragIndex) {
        throw new WireError("bad fragment fields");
      }
    }
    const length = r.uvarint();
    if (length > MAX_PAYLOAD) throw new WireError("record too long");
    if (fragCount > 0 && length === 0) throw new WireError("empty fragment");
    const payload = r.raw(length);
    if (channel === Channel.Unreliable) {
      if (base === 0) throw new WireError("unreliable_base 0");
      sequence = base + unreliable++;
      if (sequence > 0xffffffff) throw new WireError("unreliable sequence past 2^32−1");
    }
    out.push({ type, channel, sequence, orderedSequence, fragIndex, fragCount, payload });
  }
  return out;
}

/** The encoded size of a record's header (without the payload). */
export function recordHeaderLen(rec: Record): number {
  let n = 1 + uvarintLen(rec.type);
  if (rec.channel !== Channel.Unreliable) n += uvarintLen(rec.sequence);
  if (rec.channel === Channel.ReliableOrdered) n += uvarintLen(rec.orderedSequence);
  if (rec.fragCount > 0) n += 2;
  return n + uvarintLen(rec.payload.length);
}

/** Writes one record (unreliable records carry no sequence: it is implied). */
export function writeRecord(w: Writer, rec: Record): void {
  w.u8(rec.channel | (rec.fragCount > 0 ? FLAG_FRAGMENT : 0)).uvarint(rec.type);
  if (rec.channel !== Channel.Unreliable) w.uvarint(rec.sequence);
  if (rec.channel === Channel.ReliableOrdered) w.uvarint(rec.orderedSequence);
  if (rec.fragCount > 0) w.u8(rec.fragIndex).u8(rec.fragCount);
  w.uvarint(rec.payload.length).raw(rec.payload);
}

/**
 * Builds a body: unreliable_base, then the records in order. The unreliable
 * records must carry consecutive Sequences starting at base.
 */
export function buildBody(base: number, records: Record[]): Uint8Array {
  const w = new Writer();
  w.uvarint(base);
  for (const rec of records) writeRecord(w, rec);
  return w.bytesOut();
}
