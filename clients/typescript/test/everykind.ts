// Differential check of the generated codec (generated/everykind.ts, from the
// export of a Lua module with every field kind) and the runtime's receive
// check against payloads the Go reference encoded and mutated.
//
// usage: node build/test/everykind.js FILE   (one payload in hex a line)
// prints: P HEX VERDICT, VERDICT one of ok, refused, mismatch (the decoder
// and the runtime's check disagree), reencoded (accepted, but encoding the
// decoded message gives other bytes); HEX is "-" for the empty payload.

import { fromHex, hex } from "../src/wire";
import { Channel } from "../src/body";
import { checkFromServer } from "../src/schemas";
import { EveryKindSchema, EVERY_KIND_ID, decodeEveryKind, encodeEveryKind } from "../generated/everykind";

const fs = require("fs");

// Every line is a payload, the empty one included; the file ends with a newline.
const raw: string[] = fs.readFileSync(process.argv[2], "utf8").split("\n");
raw.pop();
const out: string[] = [];
for (const h of raw) {
  const p = fromHex(h);
  let decoded = false;
  let same = true;
  try {
    const m = decodeEveryKind(p);
    decoded = true;
    same = hex(encodeEveryKind(m)) === h;
  } catch {
    decoded = false;
  }
  const checked = checkFromServer(EVERY_KIND_ID, Channel.ReliableOrdered, p, (t) => (t === EVERY_KIND_ID ? EveryKindSchema : undefined)) === undefined;
  let verdict = decoded ? "ok" : "refused";
  if (decoded !== checked) verdict = "mismatch";
  else if (decoded && !same) verdict = "reencoded";
  out.push(`P ${h === "" ? "-" : h} ${verdict}`);
}
console.log(out.join("\n"));
