// The room checks (rooms.ts) over the browser's crypto provider.
import "./browser_crypto";
import "./rooms";
