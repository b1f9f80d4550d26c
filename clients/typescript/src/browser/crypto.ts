// The browser's CryptoProvider. WebCrypto gives the randomness and the
// room passwords' PBKDF2. The protocol seals and opens frames synchronously
// in its receive loop, and WebCrypto is asynchronous only (and has no
// ChaCha20-Poly1305), so the per-frame and handshake primitives come from
// the audited, maintained @noble packages (pinned in package-lock.json):
// ChaCha20-Poly1305 from @noble/ciphers, X25519 and Ed25519 from
// @noble/curves, SHA-256, HMAC and HKDF from @noble/hashes.

import { chacha20poly1305 } from "@noble/ciphers/chacha.js";
import { ed25519, x25519 } from "@noble/curves/ed25519.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { hmac } from "@noble/hashes/hmac.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { CryptoProvider, X25519Key } from "../platform";

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
  async pbkdf2Sha256(password, salt, iterations, length) {
    const subtle = globalThis.crypto.subtle;
    const key = await subtle.importKey("raw", password as BufferSource, "PBKDF2", false, ["deriveBits"]);
    const bits = await subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt: salt as BufferSource, iterations }, key, length * 8);
    return new Uint8Array(bits);
  },
};
