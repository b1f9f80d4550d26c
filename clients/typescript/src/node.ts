// The Node.js platform: node:crypto for every primitive and a UDP socket
// (dgram) for the transport. Importing this module sets them.

import { CryptoProvider, Transport, X25519Key, hasCrypto, setClock, setCrypto, setDebug, setDefaultTransport } from "./platform";
import { concat } from "./wire";
import { b64url, fromB64url } from "./handshake";

const crypto = require("crypto");
const dgram = require("dgram");

/** The X25519 private key object of a raw 32-byte secret (PKCS#8 DER). */
function x25519Private(secret: Uint8Array): NodeKeyObject {
  const prefix = Uint8Array.of(0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20);
  return crypto.createPrivateKey({ key: concat(prefix, secret), format: "der", type: "pkcs8" });
}

function x25519(secret?: Uint8Array): X25519Key {
  const privateKey: NodeKeyObject = secret ? x25519Private(secret) : crypto.generateKeyPairSync("x25519").privateKey;
  return {
    publicKey: fromB64url(privateKey.export({ format: "jwk" }).x!),
    agree(peer: Uint8Array): Uint8Array | undefined {
      try {
        const pub = crypto.createPublicKey({ key: { kty: "OKP", crv: "X25519", x: b64url(peer) }, format: "jwk" });
        return new Uint8Array(crypto.diffieHellman({ privateKey, publicKey: pub }));
      } catch {
        return undefined; // a key Node refuses (small order)
      }
    },
  };
}

/** node:crypto as the protocol's CryptoProvider. */
export const nodeCrypto: CryptoProvider = {
  name: "node:crypto",
  randomBytes: (n) => new Uint8Array(crypto.randomBytes(n)),
  sha256(...parts) {
    const h = crypto.createHash("sha256");
    for (const p of parts) h.update(p);
    return new Uint8Array(h.digest());
  },
  hmacSha256: (key, data) => new Uint8Array(crypto.createHmac("sha256", key).update(data).digest()),
  hkdfSha256: (ikm, salt, info, length) => new Uint8Array(crypto.hkdfSync("sha256", ikm, salt, info, length)),
  x25519,
  ed25519Verify(publicKey, message, signature) {
    const key = crypto.createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: b64url(publicKey) }, format: "jwk" });
    return crypto.verify(null, message, key, signature);
  },
  seal(key, nonce, aad, plaintext) {
    const c = crypto.createCipheriv("chacha20-poly1305", key, nonce, { authTagLength: 16 });
    c.setAAD(aad, { plaintextLength: plaintext.length });
    const body = c.update(plaintext);
    c.final();
    return concat(body, c.getAuthTag());
  },
  open(key, nonce, aad, sealed) {
    if (sealed.length < 16) return undefined;
    const ct = sealed.subarray(0, sealed.length - 16);
    const d = crypto.createDecipheriv("chacha20-poly1305", key, nonce, { authTagLength: 16 });
    d.setAAD(aad, { plaintextLength: ct.length });
    d.setAuthTag(sealed.subarray(sealed.length - 16));
    try {
      const plain = d.update(ct);
      d.final();
      return new Uint8Array(plain);
    } catch {
      return undefined;
    }
  },
  pbkdf2Sha256: (password, salt, iterations, length) =>
    new Promise((resolve, reject) =>
      crypto.pbkdf2(password, salt, iterations, length, "sha256", (err: Error | null, key: Uint8Array) => (err ? reject(err) : resolve(new Uint8Array(key))))),
};

/** A UDP socket to host:port; datagrams from any other source are ignored (§3.10 step 2). */
export function udpTransport(host: string, port: number): Promise<Transport> {
  const family = host.includes(":") ? "udp6" : "udp4";
  const socket = dgram.createSocket(family);
  let onDatagram: (d: Uint8Array) => void = () => {};
  let onError: (e: Error) => void = () => {};
  socket.on("message", (msg: Uint8Array, rinfo: NodeRemoteInfo) => {
    if (sameEndpoint(rinfo, host, port)) onDatagram(msg);
  });
  socket.on("error", (e: Error) => onError(e));
  const t: Transport = {
    kind: "udp",
    send: (d, done) => socket.send(d, port, host, () => done?.()),
    onDatagram: (fn) => { onDatagram = fn; },
    onError: (fn) => { onError = fn; },
    close: () => socket.close(),
  };
  return new Promise((resolve) => socket.bind(0, family === "udp6" ? "::" : "0.0.0.0", () => resolve(t)));
}

function sameEndpoint(rinfo: NodeRemoteInfo, host: string, port: number): boolean {
  if (rinfo.port !== port) return false;
  const a = rinfo.address.toLowerCase().replace(/^::ffff:/, "");
  const b = host.toLowerCase().replace(/^::ffff:/, "").replace(/^\[|\]$/g, "");
  return a === b || (b === "localhost" && (a === "127.0.0.1" || a === "::1"));
}

// A provider set before this module loaded stays (the tests run the
// protocol vectors over the browser's provider in Node too).
if (!hasCrypto()) setCrypto(nodeCrypto);
setClock(() => Number(process.hrtime.bigint() / 1000000n));
setDefaultTransport(udpTransport);
if (process.env.SPARK_TS_DEBUG) setDebug((...args) => console.error(...args));
