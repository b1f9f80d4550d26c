// Checks generated codecs (generated/alltypes.ts, from
// tsgen/testdata/alltypes.json): round trips, every bound, hostile payloads.
//
// usage: node build/test/codec.js

import { WireError, hex } from "../src/wire";
import {
  KitchenSink, encodeKitchenSink, decodeKitchenSink, encodeRawBlob, decodeRawBlob,
  encodePing, decodePing, decode, SCHEMAS, KITCHEN_SINK_ID, RAW_BLOB_ID,
} from "../generated/alltypes";

let failures = 0;
function check(what: string, ok: boolean, detail = ""): void {
  if (!ok) {
    failures++;
    console.error(`FAIL ${what} ${detail}`);
  }
}
function refused(what: string, fn: () => unknown, want?: string): void {
  try {
    fn();
  } catch (e) {
    check(what, e instanceof WireError, String(e));
    if (want && e instanceof Error) check(`${what} names ${want}`, e.message.includes(want), e.message);
    return;
  }
  check(what, false, "was accepted");
}

const sink: KitchenSink = {
  flags: 7, hp: 65535, score: 4000000000, delta: -5, speed: 1.5,
  pos: { x: 1, y: -2, z: 0.25 }, name: "zoë", blob: Uint8Array.of(1, 2, 3),
  ids: [1, 2, 0xffffffff], names: ["a", "bé"], path: [{ x: 0, y: 0, z: 0 }, { x: 1, y: 1, z: 1 }],
};
const enc = encodeKitchenSink(sink);
const expect =
  "07" + "ffff" + "0028 6bee".replace(" ", "") + "fbffffff" + "0000c03f" +
  "0000803f" + "000000c0" + "0000803e" + "04007a6fc3ab" + "0300010203" +
  "0300" + "01000000" + "02000000" + "ffffffff" + "0200" + "010061" + "030062c3a9" +
  "0200" + "000000000000000000000000" + "0000803f0000803f0000803f";
check("kitchen_sink encoding", hex(enc) === expect, `\n  got  ${hex(enc)}\n  want ${expect}`);
const dec = decodeKitchenSink(enc);
check("kitchen_sink round trip", JSON.stringify({ ...dec, blob: Array.from(dec.blob) }) === JSON.stringify({ ...sink, blob: [1, 2, 3] }), JSON.stringify(dec));

refused("u8 over range", () => encodeKitchenSink({ ...sink, flags: 256 }), "kitchen_sink.flags");
refused("u16 fraction", () => encodeKitchenSink({ ...sink, hp: 1.5 }), "kitchen_sink.hp");
refused("i32 over range", () => encodeKitchenSink({ ...sink, delta: 2 ** 31 }), "kitchen_sink.delta");
refused("f32 NaN", () => encodeKitchenSink({ ...sink, speed: NaN }), "kitchen_sink.speed");
refused("str too long", () => encodeKitchenSink({ ...sink, name: "x".repeat(17) }), "kitchen_sink.name");
refused("bytes too long", () => encodeKitchenSink({ ...sink, blob: new Uint8Array(65) }), "kitchen_sink.blob");
refused("array too long", () => encodeKitchenSink({ ...sink, ids: new Array(17).fill(0) }), "kitchen_sink.ids");
refused("array element str too long", () => encodeKitchenSink({ ...sink, names: ["y".repeat(17)] }), "kitchen_sink.names");
refused("not an object", () => encodeKitchenSink(null as unknown as KitchenSink));

refused("truncated", () => decodeKitchenSink(enc.subarray(0, enc.length - 1)));
const trailing = new Uint8Array(enc.length + 1);
trailing.set(enc);
refused("trailing byte", () => decodeKitchenSink(trailing), "trailing");
const bigCount = enc.slice();
bigCount[38] = 0xff; // the ids count (offset 27 + name 6 + blob 5)
refused("count above max_count", () => decodeKitchenSink(bigCount), "kitchen_sink.ids");
const badUtf8 = enc.slice();
badUtf8[30] = 0xff; // inside "zoë"
refused("invalid UTF-8", () => decodeKitchenSink(badUtf8), "kitchen_sink.name");
const nan = enc.slice();
nan.set([0, 0, 0xc0, 0x7f], 11); // speed = NaN
refused("non-finite f32", () => decodeKitchenSink(nan), "kitchen_sink.speed");
refused("below min_len", () => decodeKitchenSink(new Uint8Array(10)));

check("untyped round trip", hex(decodeRawBlob(encodeRawBlob(Uint8Array.of(9, 8)))) === "0908");
refused("untyped over max_len", () => encodeRawBlob(new Uint8Array(513)));
check("empty message", encodePing(new Uint8Array(0)).length === 0 && decodePing(new Uint8Array(0)).length === 0);
refused("empty message with a byte", () => decodePing(Uint8Array.of(1)));

const d = decode(KITCHEN_SINK_ID, enc);
check("dispatcher", d !== undefined && d.name === "kitchen_sink" && d.message.hp === 65535);
check("dispatcher raw", decode(RAW_BLOB_ID, Uint8Array.of(1))?.name === "raw_blob");
check("dispatcher unknown type", decode(4242, enc) === undefined);
check("schemas table", SCHEMAS.map((s) => s.id).join(",") === "2000,2001,2002");

if (failures > 0) {
  console.error(`${failures} codec checks failed`);
  process.exit(1);
}
console.log("codecs ok");
