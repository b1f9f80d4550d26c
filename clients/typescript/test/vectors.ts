// Checks the runtime byte for byte against the protocol's test vectors
// (netstack/testdata/vectors-v4.json and vectors-v4-datagram.json, which
// docs/protocol.md names as the vectors of §3 and §5).
//
// usage: node build/test/vectors.js DIR   (DIR holds the two JSON files)

import { fromHex, hex, Reader, Writer, WireError } from "../src/wire";
import { ClientHandshake, pinOf, parsePin, transcriptHash } from "../src/handshake";
import { Sealer, Opener } from "../src/seal";
import { parseBody, buildBody } from "../src/body";
import { parseModuleSchemas } from "../src/schemas";

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

// NetBuffer str.
check("str", hex(new Writer().str("hé", 8).bytesOut()), "030068c3a9");
throwsWire("str over max", () => new Reader(fromHex("030068c3a9")).str(2));
throwsWire("bad UTF-8", () => new Reader(fromHex("0100ff")).str(8));

if (failures > 0) {
  console.error(`${failures} vector checks failed`);
  process.exit(1);
}
console.log("vectors ok");
