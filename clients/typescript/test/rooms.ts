// Room payloads and the room password's verifier and proof against the
// test vector of docs/protocol.md §13.7.
import "../src/node";
import { fromHex, hex } from "../src/wire";
import { cryptoOf } from "../src/platform";
import { parseRoomResult, roomCreate, roomProof, roomStoredKey } from "../src/rooms";

async function main(): Promise<void> {
  let failures = 0;
  const check = (what: string, got: string, want: string) => {
    if (got !== want) {
      console.error(`${what}: got ${got}, want ${want}`);
      failures++;
    }
  };
  const salt = new Uint8Array(16).fill(7);
  const th = Uint8Array.from({ length: 32 }, (_, i) => i);
  check("StoredKey", hex(await roomStoredKey("hunter2", salt, 4096)), "489e16b5ac71c90b55865090db74a24876e7ee05a61896780f80c5588b36c73e");
  check("ClientProof", hex(await roomProof("hunter2", salt, 4096, 7, th)), "f0b3705d41383e37f813c534270f0317e8714e985e01808f746a448720af9693");
  const create = await roomCreate("arena", "tag", 0, "pw");
  check("RoomCreate length", String(create.length), String(2 + 5 + 2 + 3 + 2 + 1 + 16 + 4 + 32));
  check("RoomResult", JSON.stringify(parseRoomResult(fromHex("2300000700000002006f6b"))), JSON.stringify({ request: 35, code: 0, room: 7, detail: "ok" }));
  let refused = false;
  try {
    await roomProof("x", salt, 1000001, 7, th);
  } catch {
    refused = true;
  }
  check("more than 1,000,000 iterations refused", String(refused), "true");
  if (failures > 0) {
    console.error(`${failures} room checks failed`);
    process.exit(1);
  }
  console.log(`rooms ok (crypto: ${cryptoOf().name})`);
}

main();
