// Checks the runtime byte for byte against the protocol's test vectors
// (netstack/testdata/vectors-v4.json and vectors-v4-datagram.json, which
// docs/protocol.md names as the vectors of §3 and §5).
//
// usage: node build/test/vectors.js DIR   (DIR holds the two JSON files)

import "../src/node";
import { fromHex, hex, Reader, Writer, WireError } from "../src/wire";
import { ClientHandshake, pinOf, parsePin, transcriptHash } from "../src/handshake";
import { Sealer, Opener } from "../src/seal";
import { parseBody, buildBody } from "../src/body";
import { cryptoOf } from "../src/platform";
import { FieldSchema, RefuseReason, checkFields, checkFromServer, parseModuleSchemas } from "../src/schemas";

const fs = require("fs");

let failures = 0;
function check(what: string, got: unknown, want: unknown): void {
  if (got !== want) {
    failures++;
    console.error(`FAIL ${what}:\n  got  ${String(got)}\n  want ${String(want)}`);
  }
}
function throwsWire(what: string, fn: () => unknown): void {
  try {
    fn();
  } catch (e) {
    if (e instanceof WireError) return;
    failures++;
    console.error(`FAIL ${what}: threw ${String(e)} instead of a WireError`);
    return;
  }
  failures++;
  console.error(`FAIL ${what}: accepted`);
}

const dir = process.argv[2];
const v = JSON.parse(fs.readFileSync(`${dir}/vectors-v4.json`, "utf8"));
const d = JSON.parse(fs.readFileSync(`${dir}/vectors-v4-datagram.json`, "utf8"));

// §3.3 hello and §3.4 cookie round trip.
const hs = new ClientHandshake(fromHex(v.inputs.client_x25519_secret), fromHex(v.inputs.client_nonce));
check("hello core", hex(hs.core), v.client_hello_core);
check("hello", hex(hs.hello()), v.client_hello);
check("connect datagram", hex(hs.helloDatagram()), v.connect_datagram);
check("cookie reply accepted", hs.acceptCookieReply(fromHex(v.cookie_reply_payload)), true);
check("cookie", hex(hs.cookie), v.cookie);
check("hello with cookie", hex(hs.hello()), v.client_hello_with_cookie);
check("connect datagram with cookie", hex(hs.helloDatagram()), v.connect_datagram_with_cookie);
const wrongNonce = fromHex(v.cookie_reply_payload);
wrongNonce[2] ^= 1;
check("cookie reply for another nonce ignored", new ClientHandshake().acceptCookieReply(wrongNonce), false);

// §3.9 transcript, signature, keys.
const accepted = fromHex(v.connect_accepted_payload);
check("th", hex(transcriptHash(hs.core, accepted)), v.th);
const identity = accepted.subarray(11, 43);
const session = hs.accept(accepted, (id) => pinOf(id) === pinOf(identity));
check("session", session !== undefined, true);
if (session) {
  check("client id", session.clientId, v.inputs.client_id);
  check("k_c2s", hex(session.kc2s), v.k_c2s_0);
  check("k_s2c", hex(session.ks2c), v.k_s2c_0);
}
let mismatch = "";
try {
  hs.accept(accepted, () => false);
} catch (e) {
  mismatch = (e as { reason?: string }).reason ?? "";
}
check("pin mismatch", mismatch, "ServerIdentityMismatch");
const forged = accepted.slice();
forged[100] ^= 1;
let authFail = "";
try {
  hs.accept(forged, () => true);
} catch (e) {
  authFail = (e as { reason?: string }).reason ?? "";
}
check("bad signature", authFail, "HandshakeAuthFailed");
check("v3 answer ignored by a v4 handshake", hs.accept(fromHex(v.v3_downgrade.connect_accepted_payload), () => true), undefined);
check("pin round trip", pinOf(parsePin(pinOf(identity))), pinOf(identity));

// §4 sealing and §5.1 bodies.
let t = 0;
const clock = () => t;
const sealer = new Sealer(fromHex(d.k_c2s_0), clock);
check("ClientFinished frame", hex(sealer.seal(fromHex(d.client_finished_body))), d.client_finished_sealed_datagram);
const opener = new Opener(fromHex(d.k_s2c_0), clock);
const body = opener.open(fromHex(d.server_sealed_datagram));
check("server body", hex(body), d.server_datagram_body);
throwsWire("replayed frame", () => opener.open(fromHex(d.server_sealed_datagram)));
const tampered = fromHex(d.server_sealed_datagram);
tampered[20] ^= 0x80;
throwsWire("tampered frame", () => new Opener(fromHex(d.k_s2c_0), clock).open(tampered));
const recs = parseBody(body);
check("record count", recs.length, d.server_records.length);
d.server_records.forEach((want: { type: number; channel: number; sequence: number; ordered_sequence?: number; payload: string }, i: number) => {
  const r = recs[i];
  check(`record ${i} type`, r.type, want.type);
  check(`record ${i} channel`, r.channel, want.channel);
  check(`record ${i} sequence`, r.sequence, want.sequence);
  check(`record ${i} ordered`, r.orderedSequence, want.ordered_sequence ?? 0);
  check(`record ${i} payload`, hex(r.payload), want.payload);
});
check("body rebuilt", hex(buildBody(d.server_unreliable_base, recs)), d.server_datagram_body);
const frags = d.fragment_bodies.map((b: string) => parseBody(fromHex(b))[0]);
check("fragments joined", frags.map((f: { payload: Uint8Array }) => hex(f.payload)).join(""), d.fragmented_payload);
check("fragment count", frags[0].fragCount, d.fragment_bodies.length);

// §5.2 structural refusals.
throwsWire("uvarint not shortest", () => parseBody(fromHex("018000")));
throwsWire("channel 3", () => parseBody(fromHex("01030100")));
throwsWire("reserved flag", () => parseBody(fromHex("01080100")));
throwsWire("type 0", () => parseBody(fromHex("01000000")));
throwsWire("sequence 0", () => parseBody(fromHex("0101010000")));
throwsWire("unreliable fragment", () => parseBody(fromHex("010401000200")));
throwsWire("length past the end", () => parseBody(fromHex("0100010500")));
throwsWire("unreliable_base 0", () => parseBody(fromHex("00000100")));
throwsWire("uvarint ≥ 2^32", () => new Reader(fromHex("ffffffff10")).uvarint());
check("uvarint max", new Reader(fromHex("ffffffff0f")).uvarint(), 0xffffffff);
check("uvarint write", hex(new Writer().uvarint(300).bytesOut()), "ac02");

// §10.2 announcement.
const ms = parseModuleSchemas(fromHex(d.module_schemas_payload));
check("schemas revision", ms.revision, 2);
check("schemas count", ms.schemas.length, 2);
check("schema 0", `${ms.schemas[0].id} ${ms.schemas[0].owner} ${ms.schemas[0].name} ${ms.schemas[0].minLen}..${ms.schemas[0].maxLen}`, "1000 greeter Shout 3..202");
const truncated = fromHex(d.module_schemas_payload).subarray(0, 30);
throwsWire("truncated schemas", () => parseModuleSchemas(truncated));
const badCount = fromHex(d.module_schemas_payload);
badCount[4] = 0xff;
throwsWire("schemas count beyond the payload", () => parseModuleSchemas(badCount));

// §10.2 typed entries: the full typed table of the vectors.
const typed = parseModuleSchemas(fromHex(d.module_schemas_typed_payload));
check("typed revision", typed.revision, 3);
check("typed count", typed.schemas.length, 2);
const fieldText = (f: FieldSchema) =>
  `${f.name}:${f.kind}` + (f.max !== undefined ? `(${f.max})` : "") +
  (f.elem !== undefined ? `[${f.elem}${f.elemMax !== undefined ? `(${f.elemMax})` : ""} x${f.maxCount}]` : "");
const greet = typed.schemas[0];
check("typed hello_greet", `${greet.id} ${greet.owner}/${greet.name} ${greet.minLen}..${greet.maxLen} str@${greet.stringOffset} ${greet.requiresAdmitted}`, "1000 hello/hello_greet 2..34 str@0 true");
check("typed hello_greet fields", (greet.fields ?? []).map(fieldText).join(" "), "name:7(32)");
const state = typed.schemas[1];
check("typed state", `${state.id} ${state.direction} ${state.channel} ${state.minLen}..${state.maxLen} str@${state.stringOffset} ${state.requiresAdmitted}`, "1002 3 2 35..96 str@27 false");
check("typed state fields", (state.fields ?? []).map(fieldText).join(" "),
  "flag:1 hp:2 score:3 delta:4 speed:5 pos:6 tag:7(16) blob:8(8) ids:9[3 x4] names:9[7(5) x3]");
check("untyped entries have no fields", ms.schemas.every((x) => x.fields === undefined), true);

// The examples of §10.1 and §10.2, byte for byte.
check("hello_greet payload for ann", hex(new Writer().str("ann", 32).bytesOut()), "0300616e6e");
const greetEntry = "e803010102000000220000000000000003050068656c6c6f0b0068656c6c6f5f6772656574010400" + "6e616d65072000";
const table = (entries: string[], count = entries.length) => fromHex("07000000" + hex(new Writer().u16(count).bytesOut()) + entries.join(""));
const one = parseModuleSchemas(table([greetEntry]));
check("§10.2 hello_greet entry", (one.schemas[0].fields ?? []).map(fieldText).join(" "), "name:7(32)");
// An entry with the given sizes, flags and field bytes (owner "m", name "t").
const entry = (min: number, max: number, so: number, flags: number, fieldBytes: string) =>
  hex(new Writer().u16(1000).u8(3).u8(1).u32(min).u32(max).u32(so).u8(flags).str("m", 64).str("t", 64).bytesOut()) + fieldBytes;
const ids = "03006964730903" + "1000"; // ids array(16) of u32: §10.2's example
const tags = "0400746167730907" + "1000" + "0800"; // tags array(8) of str(16)
check("§10.2 ids example", (parseModuleSchemas(table([entry(2, 66, 0xffffffff, 2, "01" + ids)])).schemas[0].fields ?? []).map(fieldText).join(""), "ids:9[3 x16]");
check("§10.2 tags example", (parseModuleSchemas(table([entry(2, 146, 0xffffffff, 2, "01" + tags)])).schemas[0].fields ?? []).map(fieldText).join(""), "tags:9[7(16) x8]");
const u8f = (name: string) => hex(new Writer().str(name, 64).bytesOut()) + "01";
// What §10.2 says is malformed.
const malformed: [string, string][] = [
  ["unknown flag bit 2", entry(1, 1, 0xffffffff, 6, "01" + u8f("a"))],
  ["typed flag without fields", entry(1, 1, 0xffffffff, 2, "")],
  ["field count 0", entry(0, 0, 0xffffffff, 2, "00")],
  ["field count 33", entry(33, 33, 0xffffffff, 2, "21" + Array.from({ length: 33 }, (_, i) => u8f(`f${i}`)).join(""))],
  ["kind 0", entry(1, 1, 0xffffffff, 2, "0101006100")],
  ["kind 10", entry(1, 1, 0xffffffff, 2, "010100610a")],
  ["repeated field name", entry(2, 2, 0xffffffff, 2, "02" + u8f("a") + u8f("a"))],
  ["field name starting with a digit", entry(1, 1, 0xffffffff, 2, "01" + u8f("1a"))],
  ["field name with a dash", entry(1, 1, 0xffffffff, 2, "01" + u8f("a-b"))],
  ["field name of 33 bytes", entry(1, 1, 0xffffffff, 2, "01" + u8f("a".repeat(33)))],
  ["empty field name", entry(1, 1, 0xffffffff, 2, "01000001")],
  ["str max 0", entry(2, 2, 0, 2, "0101006107" + "0000")],
  ["bytes max 0", entry(2, 2, 0xffffffff, 2, "0101006108" + "0000")],
  ["array max_count 0", entry(2, 2, 0xffffffff, 2, "010100610903" + "0000")],
  ["array of arrays", entry(2, 6, 0xffffffff, 2, "0101006109090100")],
  ["array of kind 0", entry(2, 6, 0xffffffff, 2, "010100610900" + "0100")],
  ["array of str with elem_max 0", entry(2, 2, 0xffffffff, 2, "010100610907" + "0000" + "0100")],
  ["min_len not derived", entry(3, 34, 0, 2, "01" + "0400" + "6e616d65072000")],
  ["max_len not derived", entry(2, 35, 0, 2, "01" + "0400" + "6e616d65072000")],
  ["string_field_offset not derived", entry(2, 34, 0xffffffff, 2, "01" + "0400" + "6e616d65072000")],
  ["str after bytes has no offset", entry(4, 6, 2, 2, "02" + "0100620801" + "00" + "0100730701" + "00")],
  ["max_len over MAX_PAYLOAD", entry(4, 65536 + 3, 0xffffffff, 2, "02" + "01006108ffff" + "01006208ffff")],
  ["fields over MAX_PAYLOAD", entry(4, 65453, 0xffffffff, 2, "02" + "01006108ffff" + "01006208ffff")],
  ["truncated field list", entry(2, 34, 0, 2, "01" + "0400" + "6e616d650720")],
];
for (const [what, e] of malformed) throwsWire(`typed entry: ${what}`, () => parseModuleSchemas(table([e])));
throwsWire("typed entry: trailing byte", () => parseModuleSchemas(fromHex(hex(table([greetEntry])) + "00")));
// What §10.1 derives: a str after fixed fields has their offset; max_len counts arrays' elements.
const derived = parseModuleSchemas(table([entry(3, 7, 1, 2, "02" + u8f("a") + "0100780704" + "00")])).schemas[0];
check("derived string offset", derived.stringOffset, 1);

// §10.1 whole-layout check of received typed messages.
const lookupState = (t: number) => (t === 1002 ? state : undefined);
const R = 2; // ReliableOrdered, state's channel
const goodState = new Writer().u8(1).u16(2).u32(3).i32(-4).f32(0.5).vec3({ x: 1, y: 2, z: 3 }).str("tag", 16)
  .u16(2).raw(Uint8Array.of(7, 7)).u16(1).u32(9).u16(2).str("ab", 5).str("", 5).bytesOut();
check("typed state accepted", checkFromServer(1002, R, goodState, lookupState), undefined);
check("typed state: checkFields", (() => { try { checkFields(state.fields!, goodState); return "ok"; } catch (e) { return String(e); } })(), "ok");
const mutate = (at: number, b: number) => { const c = goodState.slice(); c[at] = b; return c; };
check("typed: trailing byte", checkFromServer(1002, R, fromHex(hex(goodState) + "00"), lookupState), RefuseReason.Malformed);
check("typed: NaN f32", checkFromServer(1002, R, (() => { const c = goodState.slice(); c.set([0, 0, 0xc0, 0x7f], 11); return c; })(), lookupState), RefuseReason.Malformed);
check("typed: Inf in vec3", checkFromServer(1002, R, (() => { const c = goodState.slice(); c.set([0, 0, 0x80, 0x7f], 23); return c; })(), lookupState), RefuseReason.Malformed);
check("typed: str over its max", checkFromServer(1002, R, mutate(27, 17), lookupState), RefuseReason.Malformed);
check("typed: NUL in str", checkFromServer(1002, R, mutate(29, 0), lookupState), RefuseReason.Malformed);
check("typed: invalid UTF-8", checkFromServer(1002, R, mutate(29, 0xff), lookupState), RefuseReason.Malformed);
check("typed: bytes over its max", checkFromServer(1002, R, mutate(32, 9), lookupState), RefuseReason.Malformed);
check("typed: count over max_count", checkFromServer(1002, R, mutate(36, 5), lookupState), RefuseReason.Malformed);
check("typed: element str over its max", checkFromServer(1002, R, mutate(44, 6), lookupState), RefuseReason.Malformed);
check("typed: below min_len", checkFromServer(1002, R, goodState.subarray(0, 34), lookupState), RefuseReason.BadSize);
check("typed: field past the end", checkFromServer(1002, R, goodState.subarray(0, goodState.length - 2), lookupState), RefuseReason.Malformed);

// The encoder refuses what a receiver would refuse.
throwsWire("f32 beyond binary32", () => new Writer().f32(1e39));
throwsWire("lone surrogate", () => new Writer().str("a\ud800", 8));
check("surrogate pair", hex(new Writer().str("\u{1F600}", 8).bytesOut()), "0400f09f9880");

// NetBuffer str.
check("str", hex(new Writer().str("hé", 8).bytesOut()), "030068c3a9");
throwsWire("str over max", () => new Reader(fromHex("030068c3a9")).str(2));
throwsWire("bad UTF-8", () => new Reader(fromHex("0100ff")).str(8));

if (failures > 0) {
  console.error(`${failures} vector checks failed`);
  process.exit(1);
}
console.log(`vectors ok (crypto: ${cryptoOf().name})`);
