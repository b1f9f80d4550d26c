// The two things the protocol code takes from its platform: the crypto
// primitives and a datagram transport. The Node build (node.ts) gives them
// from node:crypto and UDP sockets; the browser build (browser/) from
// WebCrypto, the @noble packages, WebTransport and WebSocket. The protocol
// code (handshake, sealing, reliability, rooms) is the same in both.

/** An X25519 key pair of one handshake. */
export interface X25519Key {
  /** The 32-byte public key. */
  readonly publicKey: Uint8Array;
  /** The shared secret with a peer's public key; undefined when the platform refuses the key (small order). */
  agree(peer: Uint8Array): Uint8Array | undefined;
}

/** An X25519 key pair whose agreement is asynchronous (WebCrypto's). */
export interface AsyncX25519Key {
  readonly publicKey: Uint8Array;
  agree(peer: Uint8Array): Promise<Uint8Array | undefined>;
}

/**
 * The handshake's primitives from an asynchronous implementation (the
 * browser's WebCrypto), used where the platform has them. Each answers
 * undefined when this platform does not support the algorithm; the
 * synchronous primitives of the CryptoProvider then serve.
 */
export interface AsyncHandshakeCrypto {
  x25519(): Promise<AsyncX25519Key | undefined>;
  ed25519Verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean | undefined>;
  sha256(...parts: Uint8Array[]): Promise<Uint8Array | undefined>;
  hkdfSha256(ikm: Uint8Array, salt: Uint8Array, info: Uint8Array, length: number): Promise<Uint8Array | undefined>;
  hmacSha256(key: Uint8Array, data: Uint8Array): Promise<Uint8Array | undefined>;
}

/**
 * The primitives of docs/protocol.md §3–§4. They are synchronous: frames
 * are sealed and opened inside the receive loop, in order.
 */
export interface CryptoProvider {
  /** Names the implementations, for a person ("node:crypto", "WebCrypto + @noble"). */
  readonly name: string;
  randomBytes(n: number): Uint8Array;
  sha256(...parts: Uint8Array[]): Uint8Array;
  hmacSha256(key: Uint8Array, data: Uint8Array): Uint8Array;
  hkdfSha256(ikm: Uint8Array, salt: Uint8Array, info: Uint8Array, length: number): Uint8Array;
  /** A fresh key pair, or the pair of a fixed secret (test vectors only). */
  x25519(secret?: Uint8Array): X25519Key;
  ed25519Verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean;
  /** ChaCha20-Poly1305: ciphertext ‖ 16-byte tag. */
  seal(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array;
  /** The plaintext, or undefined when the tag does not verify. */
  open(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Uint8Array | undefined;
  /** PBKDF2-HMAC-SHA-256 (room passwords, §13.7). */
  pbkdf2Sha256(password: Uint8Array, salt: Uint8Array, iterations: number, length: number): Promise<Uint8Array>;
  /** The handshake's primitives where the platform has them asynchronously (browsers: WebCrypto). */
  readonly handshake?: AsyncHandshakeCrypto;
}

/**
 * A datagram path to one server: each send is one v4 datagram, each
 * delivery one datagram received (UDP, a WebTransport datagram or overflow
 * frame, a WebSocket binary message).
 */
export interface Transport {
  /** "udp", "webtransport" or "websocket". */
  readonly kind: string;
  /** The largest datagram the client should pack (§14.3); undefined: no limit below the client's datagramSize. */
  readonly maxDatagram?: number;
  /** Sends one datagram; done is called once the write completed (or failed). */
  send(datagram: Uint8Array, done?: () => void): void;
  /** Called with each datagram received from the server. */
  onDatagram(fn: (datagram: Uint8Array) => void): void;
  /** Called once when the transport fails or the server closed it. */
  onError(fn: (e: Error) => void): void;
  close(): void;
}

let provider: CryptoProvider | undefined;

/** Sets the crypto provider (the entry point of each build does). */
export function setCrypto(p: CryptoProvider): void {
  provider = p;
}

/** Whether a crypto provider is set. */
export function hasCrypto(): boolean {
  return provider !== undefined;
}

/** The crypto provider; throws when no build entry point set one. */
export function cryptoOf(): CryptoProvider {
  if (!provider) throw new Error("no crypto provider: import the client from its index (Node) or browser entry point");
  return provider;
}

let clock: () => number = () => Date.now();

/** Sets the monotonic millisecond clock. */
export function setClock(fn: () => number): void {
  clock = fn;
}

/** Milliseconds on the platform's monotonic clock. */
export function now(): number {
  return clock();
}

let defaultTransport: ((host: string, port: number) => Promise<Transport>) | undefined;

/** Sets the transport Client.connect opens when ClientOptions.transport is not given (Node: UDP). */
export function setDefaultTransport(fn: (host: string, port: number) => Promise<Transport>): void {
  defaultTransport = fn;
}

/** Opens the default transport to host:port; rejects when the platform has none (a browser: use connectWeb). */
export function openDefaultTransport(host: string, port: number): Promise<Transport> {
  if (!defaultTransport) return Promise.reject(new Error("no default transport on this platform: give ClientOptions.transport (browsers: connectWeb)"));
  return defaultTransport(host, port);
}

let debugFn: ((...args: unknown[]) => void) | undefined;

/** Sets where the runtime's debug lines go (Node: stderr when SPARK_TS_DEBUG is set). */
export function setDebug(fn: ((...args: unknown[]) => void) | undefined): void {
  debugFn = fn;
}

/** Writes a debug line, when a debug sink is set. */
export function debug(...args: unknown[]): void {
  if (debugFn) debugFn(...args);
}
