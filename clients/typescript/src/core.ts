// The platform-free runtime: everything but the crypto provider and the
// default transport, which each build's entry point sets (index.ts for
// Node, browser.ts for browsers).
export * from "./wire";
export { Channel, Record, parseBody, buildBody } from "./body";
export {
  Direction, MessageSchema, ModuleProtocol, ModuleProtocols, ModuleSchemas, NO_STRING_FIELD, RefuseReason, parseModuleProtocols, parseModuleSchemas,
  Kind, FieldSchema, Layout, MAX_FIELDS, MAX_FIELD_NAME, fieldLayout, checkFields, validFieldName,
} from "./schemas";
export { HoldQueue, HeldMessage, HOLD_MAX_MESSAGES, HOLD_MAX_BYTES, HOLD_UNANNOUNCED_MS } from "./hold";
export { GameStateSync, EntityType, EntityField, parseGameStateSync } from "./gamestate";
export { pinOf, parsePin, RejectReason } from "./handshake";
export { Client, ClientOptions, ClientError, ClientStats, CloseInfo, DisconnectReason, Message } from "./client";
export { CryptoProvider, Transport, X25519Key, cryptoOf, setCrypto } from "./platform";
