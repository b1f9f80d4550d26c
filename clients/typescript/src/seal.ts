// Sealed frames (docs/protocol.md §4): ChaCha20-Poly1305 under per-direction
// keys, a key epoch ratchet, and a 1024-frame replay window.

import { WireError } from "./wire";
import { hkdfExpand, FRAME_SEALED } from "./handshake";
import { cryptoOf } from "./platform";

export const SECURE_VERSION = 1;
export const SEAL_HEADER = 11;
export const TAG_LEN = 16;
/** Bytes a sealed frame adds to its plaintext (header + tag). */
export const SEAL_OVERHEAD = SEAL_HEADER + TAG_LEN;

const REPLAY_WINDOW = 1024;
const EPOCH_SECONDS = 600;
const EPOCH_FRAMES = 2 ** 31;
const PREVIOUS_EPOCH_MS = 5000;
const LAST_EPOCH = 255;

function ratchet(key: Uint8Array): Uint8Array {
  return hkdfExpand(key, "spark-net-100 ratchet");
}

function nonce(epoch: number, seq: bigint): Uint8Array {
  const n = new Uint8Array(12);
  n[0] = epoch;
  new DataView(n.buffer).setBigUint64(4, seq, true);
  return n;
}

function header(epoch: number, seq: bigint): Uint8Array {
  const h = new Uint8Array(SEAL_HEADER);
  h[0] = FRAME_SEALED;
  h[1] = SECURE_VERSION;
  h[2] = epoch;
  new DataView(h.buffer).setBigUint64(3, seq, true);
  return h;
}

/** Seals one direction's frames: the frame sequence, epochs and their keys. */
export class Sealer {
  private epoch = 0;
  private seq = 0n;
  private epochStarted = -1; // ms of the epoch's first frame
  private framesInEpoch = 0;

  constructor(private key: Uint8Array, private readonly now: () => number) {}

  /** True once epoch 255 has reached its limit: only the KeyExhausted Disconnect may follow. */
  exhausted(): boolean {
    return this.epoch === LAST_EPOCH && this.due();
  }

  private due(): boolean {
    return this.epochStarted >= 0 && (this.now() - this.epochStarted >= EPOCH_SECONDS * 1000 || this.framesInEpoch >= EPOCH_FRAMES);
  }

  seal(plaintext: Uint8Array): Uint8Array {
    if (this.due() && this.epoch < LAST_EPOCH) {
      this.epoch++;
      this.key = ratchet(this.key);
      this.epochStarted = -1;
      this.framesInEpoch = 0;
    }
    if (this.epochStarted < 0) this.epochStarted = this.now();
    this.framesInEpoch++;
    const h = header(this.epoch, this.seq);
    const sealed = cryptoOf().seal(this.key, nonce(this.epoch, this.seq), h, plaintext);
    this.seq++;
    const out = new Uint8Array(SEAL_HEADER + sealed.length);
    out.set(h, 0);
    out.set(sealed, SEAL_HEADER);
    return out;
  }
}

/** Opens the other direction's frames in §4's receive order. */
export class Opener {
  private epoch = 0;
  private keys = new Map<number, Uint8Array>();
  private previousUntil = 0; // ms until which epoch − 1 is still accepted
  private highest = -1n;
  private readonly seen = new Uint8Array(REPLAY_WINDOW);

  constructor(key: Uint8Array, private readonly now: () => number) {
    this.keys.set(0, key);
  }

  private keyOf(e: number): Uint8Array | undefined {
    let k = this.keys.get(e);
    if (!k && e === this.epoch + 1) {
      k = ratchet(this.keys.get(this.epoch)!); // derived once and cached
      this.keys.set(e, k);
    }
    return k;
  }

  /** The plaintext of an authenticated, fresh frame; throws WireError (a security drop) otherwise. */
  open(frame: Uint8Array): Uint8Array {
    if (frame.length < SEAL_OVERHEAD || frame[0] !== FRAME_SEALED) throw new WireError("not a sealed frame");
    if (frame[1] !== SECURE_VERSION) throw new WireError("secure version");
    const e = frame[2];
    const okEpoch = e === this.epoch || (e === this.epoch + 1 && e <= LAST_EPOCH) || (e === this.epoch - 1 && this.now() < this.previousUntil);
    if (!okEpoch) throw new WireError("epoch");
    const s = new DataView(frame.buffer, frame.byteOffset, frame.byteLength).getBigUint64(3, true);
    if (this.highest >= 0n && s <= this.highest) {
      if (this.highest - s >= BigInt(REPLAY_WINDOW)) throw new WireError("replay: too old");
      if (this.seen[Number(s % BigInt(REPLAY_WINDOW))]) throw new WireError("replay");
    }
    const key = this.keyOf(e);
    if (!key) throw new WireError("epoch key");
    const plain = cryptoOf().open(key, nonce(e, s), frame.subarray(0, SEAL_HEADER), frame.subarray(SEAL_HEADER));
    if (!plain) throw new WireError("authentication failed");
    // Only an authenticated frame moves the window and the epoch.
    this.mark(s);
    if (e === this.epoch + 1) {
      this.keys.delete(this.epoch - 1);
      this.epoch = e;
      this.previousUntil = this.now() + PREVIOUS_EPOCH_MS;
    }
    return plain;
  }

  private mark(s: bigint): void {
    const w = BigInt(REPLAY_WINDOW);
    if (s > this.highest) {
      if (this.highest < 0n || s - this.highest >= w) {
        this.seen.fill(0);
      } else {
        for (let i = this.highest + 1n; i < s; i++) this.seen[Number(i % w)] = 0;
      }
      this.highest = s;
    }
    this.seen[Number(s % w)] = 1;
  }
}
