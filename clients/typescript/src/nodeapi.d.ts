// The few Node.js APIs the runtime uses, declared here so that the client
// compiles with a bare TypeScript compiler (Debian's node-typescript) and no
// npm packages (@types/node). Only what src/ calls is declared; Buffer is
// seen as the Uint8Array it extends.

declare function setTimeout(fn: () => void, ms: number): unknown;
declare function clearTimeout(handle: unknown): void;
declare function setInterval(fn: () => void, ms: number): unknown;
declare function clearInterval(handle: unknown): void;

declare const console: {
  log(...args: unknown[]): void;
  error(...args: unknown[]): void;
};

declare const process: {
  argv: string[];
  env: { [key: string]: string | undefined };
  exitCode: number | undefined;
  exit(code?: number): never;
  hrtime: { bigint(): bigint };
};

declare class TextEncoder {
  encode(s: string): Uint8Array;
}
declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean });
  decode(b: Uint8Array): string;
}

declare function require(name: "dgram"): NodeDgram;
declare function require(name: "crypto"): NodeCrypto;
declare function require(name: "fs"): NodeFs;

interface NodeFs {
  readFileSync(path: string, encoding: "utf8"): string;
}

interface NodeRemoteInfo {
  address: string;
  family: string;
  port: number;
  size: number;
}

interface NodeSocket {
  on(event: "message", fn: (msg: Uint8Array, rinfo: NodeRemoteInfo) => void): this;
  on(event: "error", fn: (err: Error) => void): this;
  bind(port: number, address: string, cb: () => void): void;
  send(msg: Uint8Array, port: number, address: string, cb?: (err: Error | null) => void): void;
  close(cb?: () => void): void;
  unref(): void;
}

interface NodeDgram {
  createSocket(type: "udp4" | "udp6"): NodeSocket;
}

interface NodeKeyObject {
  export(options: { format: "jwk" }): { x?: string; d?: string };
}

interface NodeCipher {
  setAAD(aad: Uint8Array, options: { plaintextLength: number }): this;
  update(data: Uint8Array): Uint8Array;
  final(): Uint8Array;
  getAuthTag(): Uint8Array;
}

interface NodeDecipher {
  setAAD(aad: Uint8Array, options: { plaintextLength: number }): this;
  setAuthTag(tag: Uint8Array): this;
  update(data: Uint8Array): Uint8Array;
  final(): Uint8Array;
}

interface NodeHash {
  update(data: Uint8Array): this;
  digest(): Uint8Array;
}

interface NodeCrypto {
  randomBytes(n: number): Uint8Array;
  createHash(alg: "sha256"): NodeHash;
  createHmac(alg: "sha256", key: Uint8Array): NodeHash;
  pbkdf2(password: Uint8Array, salt: Uint8Array, iterations: number, len: number, digest: "sha256", cb: (err: Error | null, key: Uint8Array) => void): void;
  hkdfSync(alg: "sha256", ikm: Uint8Array, salt: Uint8Array, info: Uint8Array, len: number): ArrayBuffer;
  generateKeyPairSync(type: "x25519"): { publicKey: NodeKeyObject; privateKey: NodeKeyObject };
  createPublicKey(key: { key: { kty: string; crv: string; x: string }; format: "jwk" }): NodeKeyObject;
  createPrivateKey(key: { key: Uint8Array; format: "der"; type: "pkcs8" }): NodeKeyObject;
  diffieHellman(options: { privateKey: NodeKeyObject; publicKey: NodeKeyObject }): Uint8Array;
  verify(alg: null, data: Uint8Array, key: NodeKeyObject, signature: Uint8Array): boolean;
  createCipheriv(alg: "chacha20-poly1305", key: Uint8Array, iv: Uint8Array, options: { authTagLength: number }): NodeCipher;
  createDecipheriv(alg: "chacha20-poly1305", key: Uint8Array, iv: Uint8Array, options: { authTagLength: number }): NodeDecipher;
}
