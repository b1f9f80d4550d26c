// The protocol vectors (vectors.ts) over the browser's crypto provider.
import "./browser_crypto";
import "./vectors";
