// The sparkhost TypeScript client runtime for browsers (an ES module, no
// Node APIs): WebCrypto and the @noble packages for the crypto, WebTransport
// and WebSocket for the transport (docs/protocol.md §14).
import { setClock, setCrypto } from "./platform";
import { browserCrypto } from "./browser/crypto";

setCrypto(browserCrypto);
setClock(() => Math.floor(performance.now()));

export * from "./core";
export * from "./rooms";
export { browserCrypto } from "./browser/crypto";
export { openWebTransport, openWebSocket } from "./browser/transport";
export { connectWeb, fetchWebInfo, ConnectWebOptions, WebConnection, WebInfo } from "./browser/connect";
