// The overflow stream's frame reader (src/browser/transport.ts) against
// hostile and split input: every split of a stream of frames gives the same
// datagrams; bad lengths and a stream ending inside a frame are refused;
// random streams never crash it. Bundled by esbuild and run in Node.
import { FrameReader } from "../src/browser/transport";

let failures = 0;
const check = (what: string, ok: boolean) => {
  if (!ok) {
    console.error(`${what}: failed`);
    failures++;
  }
};
const frame = (n: number, fill: number) => {
  const f = new Uint8Array(2 + n);
  f[0] = n >> 8;
  f[1] = n & 0xff;
  f.fill(fill, 2);
  return f;
};
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
};
const throws = (fn: () => void) => {
  try {
    fn();
    return false;
  } catch {
    return true;
  }
};

const stream = concat(frame(1, 1), frame(1200, 2), frame(65507, 3), frame(5, 4));
const want = [1, 1200, 65507, 5];
for (const step of [1, 2, 3, 7, 1000, 65536, stream.length]) {
  const r = new FrameReader();
  const got: Uint8Array[] = [];
  for (let i = 0; i < stream.length; i += step) got.push(...r.push(stream.subarray(i, i + step)));
  check(`chunks of ${step}: lengths`, JSON.stringify(got.map((d) => d.length)) === JSON.stringify(want));
  check(`chunks of ${step}: contents`, got.every((d, i) => d.every((b) => b === i + 1)));
  check(`chunks of ${step}: ends on a frame boundary`, !throws(() => r.end()));
}
check("length 0 refused", throws(() => new FrameReader().push(Uint8Array.of(0, 0))));
check("length 65,508 refused", throws(() => new FrameReader().push(Uint8Array.of(0xff, 0xe4))));
check("length 65,535 refused", throws(() => new FrameReader().push(Uint8Array.of(0xff, 0xff, 1))));
const cut = new FrameReader();
cut.push(frame(10, 9).subarray(0, 7));
check("a stream ending inside a frame is refused", throws(() => cut.end()));
const half = new FrameReader();
half.push(Uint8Array.of(0));
check("a stream ending inside a length is refused", throws(() => half.end()));

// Random streams: the reader returns datagrams of 1..65,507 bytes or throws
// an Error, nothing else, and holds no more than one frame.
let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
for (let i = 0; i < 2000; i++) {
  const r = new FrameReader();
  try {
    for (let j = 0; j < 8; j++) {
      const c = new Uint8Array(Math.floor(rand() * 64));
      for (let k = 0; k < c.length; k++) c[k] = rand() < 0.5 ? Math.floor(rand() * 4) : Math.floor(rand() * 256);
      for (const d of r.push(c)) check("random: a datagram of 1..65,507 bytes", d.length >= 1 && d.length <= 65507);
    }
  } catch (e) {
    check("random: refusals are Errors", e instanceof Error);
  }
}

if (failures > 0) {
  console.error(`${failures} frame checks failed`);
  process.exit(1);
}
console.log("frames ok");
