// A complete client for scripts/hello.lua: connects, greets, prints the
// reply, disconnects. It uses the code generated from the server's schema
// export (generated/hello.ts; see README.md).
//
// usage: node build/examples/hello.js HOST PORT PIN NAME [--announced-only]
//
// --announced-only: do not give the client the generated schemas, so that it
// accepts hello_reply on the strength of the server's ModuleSchemas
// announcement alone.

import { Client, Direction, Kind } from "../src/index";
import { SCHEMAS, HELLO_REPLY_ID, decode, sendHelloGreet } from "../generated/hello";

const dirName: { [d: number]: string } = { [Direction.ClientToServer]: "c2s", [Direction.ServerToClient]: "s2c", [Direction.Both]: "both" };
const chanName = ["unreliable", "reliable", "reliable_ordered"];

async function main(): Promise<void> {
  const [host, port, pin, name] = process.argv.slice(2);
  if (!name) {
    console.error("usage: hello HOST PORT PIN NAME [--announced-only]");
    process.exit(2);
  }
  const announcedOnly = process.argv.includes("--announced-only");
  const client = await Client.connect({ host, port: Number(port), pin, name, schemas: announcedOnly ? [] : SCHEMAS });
  console.log(`connected as client ${client.id} to ${client.gameState?.serverName ?? "?"}`);

  // The announcement usually arrives with the admission; wait for it if not.
  if (!client.moduleSchemas) {
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("no ModuleSchemas announcement within 5 s")), 5000);
      client.onSchemas = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }
  const ann = client.moduleSchemas!;
  for (const s of ann.schemas) {
    const so = s.stringOffset === 0xffffffff ? "-" : String(s.stringOffset);
    const fields = s.fields === undefined ? "untyped" : s.fields.map((f) => `${f.name}:${Kind[f.kind]}${f.max !== undefined ? `(${f.max})` : ""}`).join(",");
    console.log(`schema rev ${ann.revision} ${s.owner}/${s.name} ${s.id} ${dirName[s.direction]} ${chanName[s.channel]} ${s.minLen}..${s.maxLen} str@${so} admitted=${s.requiresAdmitted} fields=${fields}`);
  }

  const reply = client.waitFor((m) => m.type === HELLO_REPLY_ID, 10000);
  sendHelloGreet(client, { name });
  const m = await reply;
  const d = decode(m.type, m.payload);
  if (!d || d.name !== "hello_reply") throw new Error(`unexpected message ${m.type}`);
  console.log(`reply: ${d.message.text}`);

  const info = await client.close();
  const s = client.stats;
  console.log(`closed ${info.reasonName} (sent ${s.datagramsSent} datagrams, received ${s.datagramsReceived}, dropped ${s.malformedDropped + s.securityDrops}, refused ${s.messagesRefused}, retransmitted ${s.retransmissions}, ignored ${s.ignored})`);
}

main().catch((e) => {
  console.error(`error: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
