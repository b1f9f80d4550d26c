// Checks the hold of reliable module messages that overtook their type's
// announcement (src/hold.ts, docs/protocol.md §10.2): arrival order, the
// 3 s bound, the 64-message and 64 KiB bounds, copies not views.
//
// usage: node build/test/hold.js

import { HoldQueue, HeldMessage, HOLD_MAX_MESSAGES, HOLD_MAX_BYTES, HOLD_UNANNOUNCED_MS } from "../src/hold";

let failures = 0;
function check(what: string, got: unknown, want: unknown): void {
  if (got !== want) {
    failures++;
    console.error(`FAIL ${what}: got ${String(got)}, want ${String(want)}`);
  }
}

const msg = (type: number, sequence: number, at: number, size = 1): HeldMessage => ({ type, channel: 1, sequence, payload: new Uint8Array(size).fill(sequence & 0xff), at });
const run = (q: HoldQueue, now: number, named: Set<number>) => {
  const got: string[] = [];
  q.release(now, (t) => named.has(t), (m) => got.push(`d${m.sequence}`), (m) => got.push(`x${m.sequence}`));
  return got.join(" ");
};

check("bounds", `${HOLD_MAX_MESSAGES} ${HOLD_MAX_BYTES} ${HOLD_UNANNOUNCED_MS}`, "64 65536 3000");

let q = new HoldQueue();
const m1 = msg(1000, 1, 0);
q.hold(m1);
m1.payload[0] = 99; // the queue keeps a copy
q.hold(msg(1001, 2, 10));
q.hold(msg(1000, 3, 20));
check("nothing named, in time", run(q, 100, new Set()), "");
check("held", q.length, 3);
// 1000 named: the first goes, the second (1001) still waits and keeps the third behind it.
let delivered: HeldMessage[] = [];
q.release(200, (t) => t === 1000, (m) => delivered.push(m), () => undefined);
check("first delivered", delivered.map((m) => m.sequence).join(","), "1");
check("copy, not a view", delivered[0].payload[0], 1);
check("in arrival order: the rest wait behind 1001", q.length, 2);
check("1001 expires, then 1000 goes", run(q, 10 + HOLD_UNANNOUNCED_MS, new Set([1000])), "x2 d3");
check("empty", `${q.length} ${q.bytes}`, "0 0");

q = new HoldQueue();
q.hold(msg(1000, 1, 0));
check("expired at 3 s, not before", run(q, HOLD_UNANNOUNCED_MS - 1, new Set()), "");
check("expired", run(q, HOLD_UNANNOUNCED_MS, new Set()), "x1");

q = new HoldQueue();
let n = 0;
while (q.hold(msg(1000, ++n, 0))) {}
check("64 messages at most", q.length, HOLD_MAX_MESSAGES);
q = new HoldQueue();
check("64 KiB at most: one of 65536", q.hold(msg(1000, 1, 0, HOLD_MAX_BYTES)), true);
check("64 KiB at most: one byte more", q.hold(msg(1000, 2, 0, 1)), false);
check("bytes", q.bytes, HOLD_MAX_BYTES);
run(q, 0, new Set([1000]));
check("bytes released", q.bytes, 0);

// A callback that holds again: the new message waits for the next call.
q = new HoldQueue();
q.hold(msg(1000, 1, 0));
let again = "";
q.release(0, () => true, (m) => { again += `d${m.sequence}`; q.hold(msg(1002, 9, 0)); }, () => undefined);
check("held during release", `${again} ${q.length}`, "d1 1");
q.clear();
check("cleared", `${q.length} ${q.bytes}`, "0 0");

if (failures > 0) {
  console.error(`${failures} hold checks failed`);
  process.exit(1);
}
console.log("hold ok");
