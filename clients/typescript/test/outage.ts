// A client whose path goes dark while a reliable message of its own is
// unacknowledged, for longer than ten retransmissions' waits at its RTO
// but shorter than its 10 s liveness timeout (docs/protocol.md §5.4,
// "Giving up"): it must not give up, and the message must be answered
// once the path is back. Driven by outage_test.go: it prints "warm" after
// a first greeting's reply (so that it has RTT samples), then waits for a
// line on stdin — the path is dark now — and greets again.
//
// usage: node build/test/outage.js HOST PORT PIN NAME

import { Client } from "../src/index";
import { HELLO_REPLY_ID, decode, sendHelloGreet } from "../generated/hello";

async function greet(client: Client, name: string, wait: number): Promise<string> {
  const reply = client.waitFor((m) => m.type === HELLO_REPLY_ID, wait);
  sendHelloGreet(client, { name });
  const m = await reply;
  const d = decode(m.type, m.payload);
  if (!d || d.name !== "hello_reply") throw new Error(`unexpected message ${m.type}`);
  return d.message.text;
}

// Node's stdin, which src/nodeapi.d.ts does not declare.
const stdin = (process as unknown as { stdin: { once(ev: string, f: () => void): void; pause(): void } }).stdin;

function stdinLine(): Promise<void> {
  return new Promise((resolve) => stdin.once("data", () => resolve()));
}

async function main(): Promise<void> {
  const [host, port, pin, name] = process.argv.slice(2);
  const client = await Client.connect({ host, port: Number(port), pin, name });
  console.log(`warm: ${await greet(client, name, 10000)}`);
  await stdinLine();
  const before = client.stats.retransmissions;
  const ended = client.closed().then((info) => {
    throw new Error(`the session ended: ${info.reasonName} (${info.detail})`);
  });
  console.log(`after the outage: ${await Promise.race([greet(client, name, 15000), ended])}`);
  console.log(`retransmitted during the outage ${client.stats.retransmissions - before}`);
  stdin.pause();
  const info = await client.close();
  console.log(`closed ${info.reasonName}`);
}

main().catch((e) => {
  console.error(`error: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
