// Sets the browser build's crypto provider before anything else loads, so
// that browser_vectors.ts checks it against the protocol's vectors (in Node,
// which has WebCrypto's getRandomValues and subtle as a browser does).
import { setCrypto } from "../src/platform";
import { browserCrypto } from "../src/browser/crypto";

setCrypto(browserCrypto);
