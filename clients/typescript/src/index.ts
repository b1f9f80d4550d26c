// The sparkhost TypeScript client runtime for Node.js (protocol v4,
// docs/protocol.md): node:crypto and UDP. Browsers import browser.ts.
import "./node";
export * from "./core";
export { nodeCrypto, udpTransport } from "./node";
