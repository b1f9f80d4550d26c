// The browser's CryptoProvider. WebCrypto gives the randomness, the room
// passwords' PBKDF2 and, where the browser has them (Chromium does), the
// handshake's X25519, Ed25519, SHA-256, HKDF and HMAC (the handshake may
// wait). The protocol seals and opens frames synchronously in its receive
// loop and WebCrypto is asynchronous only, with no ChaCha20-Poly1305, so the
// per-frame primitives, and the handshake's where WebCrypto lacks them, come
// from the audited, maintained @noble packages (pinned in
// package-lock.json): ChaCha20-Poly1305 from @noble/ciphers, X25519 and
// Ed25519 from @noble/curves, SHA-256, HMAC and HKDF from @noble/hashes.

import { chacha20poly1305 } from "@noble/ciphers/chacha.js";
import { ed25519, x25519 } from "@noble/curves/ed25519.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { hmac } from "@noble/hashes/hmac.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { pbkdf2Async } from "@noble/hashes/pbkdf2.js";
import { AsyncHandshakeCrypto, AsyncX25519Key, CryptoProvider, X25519Key } from "../platform";

function randomBytes(n: number): Uint8Array {
  const b = new Uint8Array(n);
  globalThis.crypto.getRandomValues(b);
  return b;
}

function x25519Key(secret?: Uint8Array): X25519Key {
  const priv = secret ? secret.slice() : randomBytes(32);
  return {
    publicKey: x25519.getPublicKey(priv),
    agree(peer: Uint8Array): Uint8Array | undefined {
      try {
        return x25519.getSharedSecret(priv, peer);
      } catch {
        return undefined; // a low-order key: treated as an all-zero secret
      }
    },
  };
}

const subtle = (): SubtleCrypto | undefined => globalThis.crypto?.subtle;
const buf = (b: Uint8Array) => b as Uint8Array<ArrayBuffer>;

/** Runs a WebCrypto operation; undefined when the browser does not have it (or refuses it). */
async function maybe<T>(fn: (s: SubtleCrypto) => Promise<T>): Promise<T | undefined> {
  const s = subtle();
  if (!s) return undefined;
  try {
    return await fn(s);
  } catch {
    return undefined;
  }
}

/** The handshake's primitives from WebCrypto, where the browser has them. */
export const webCryptoHandshake: AsyncHandshakeCrypto = {
  async x25519(): Promise<AsyncX25519Key | undefined> {
    const pair = await maybe((s) => s.generateKey({ name: "X25519" }, false, ["deriveBits"]) as Promise<CryptoKeyPair>);
    if (!pair) return undefined;
    const pub = await maybe((s) => s.exportKey("raw", pair.publicKey));
    if (!pub) return undefined;
    return {
      publicKey: new Uint8Array(pub),
      async agree(peer: Uint8Array): Promise<Uint8Array | undefined> {
        // WebCrypto refuses a low-order key (an all-zero secret): undefined.
        const bits = await maybe(async (s) => {
          const key = await s.importKey("raw", buf(peer), { name: "X25519" }, false, []);
          return s.deriveBits({ name: "X25519", public: key }, pair.privateKey, 256);
        });
        return bits ? new Uint8Array(bits) : undefined;
      },
    };
  },
  async ed25519Verify(publicKey, message, signature) {
    return maybe(async (s) => {
      const key = await s.importKey("raw", buf(publicKey), { name: "Ed25519" }, false, ["verify"]);
      return s.verify({ name: "Ed25519" }, key, buf(signature), buf(message));
    });
  },
  async sha256(...parts) {
    let n = 0;
    for (const p of parts) n += p.length;
    const all = new Uint8Array(n);
    n = 0;
    for (const p of parts) {
      all.set(p, n);
      n += p.length;
    }
    const d = await maybe((s) => s.digest("SHA-256", all));
    return d ? new Uint8Array(d) : undefined;
  },
  async hkdfSha256(ikm, salt, info, length) {
    const bits = await maybe(async (s) => {
      const key = await s.importKey("raw", buf(ikm), "HKDF", false, ["deriveBits"]);
      return s.deriveBits({ name: "HKDF", hash: "SHA-256", salt: buf(salt), info: buf(info) }, key, length * 8);
    });
    return bits ? new Uint8Array(bits) : undefined;
  },
  async hmacSha256(key, data) {
    const mac = await maybe(async (s) => {
      const k = await s.importKey("raw", buf(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      return s.sign("HMAC", k, buf(data));
    });
    return mac ? new Uint8Array(mac) : undefined;
  },
};

/** WebCrypto and the @noble packages as the protocol's CryptoProvider. */
export const browserCrypto: CryptoProvider = {
  name: "WebCrypto + @noble",
  randomBytes,
  sha256(...parts) {
    const h = sha256.create();
    for (const p of parts) h.update(p);
    return h.digest();
  },
  hmacSha256: (key, data) => hmac(sha256, key, data),
  hkdfSha256: (ikm, salt, info, length) => hkdf(sha256, ikm, salt, info, length),
  x25519: x25519Key,
  ed25519Verify(publicKey, message, signature) {
    try {
      return ed25519.verify(signature, message, publicKey, { zip215: false });
    } catch {
      return false;
    }
  },
  seal: (key, nonce, aad, plaintext) => chacha20poly1305(key, nonce, aad).encrypt(plaintext),
  open(key, nonce, aad, sealed) {
    try {
      return chacha20poly1305(key, nonce, aad).decrypt(sealed);
    } catch {
      return undefined;
    }
  },
  handshake: webCryptoHandshake,
  // WebCrypto's PBKDF2; a page that is not a secure context (plain HTTP
  // from another host) has no crypto.subtle: @noble/hashes then.
  async pbkdf2Sha256(password, salt, iterations, length) {
    const bits = await maybe(async (s) => {
      const key = await s.importKey("raw", buf(password), "PBKDF2", false, ["deriveBits"]);
      return s.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt: buf(salt), iterations }, key, length * 8);
    });
    return bits ? new Uint8Array(bits) : pbkdf2Async(sha256, password, salt, { c: iterations, dkLen: length });
  },
};
