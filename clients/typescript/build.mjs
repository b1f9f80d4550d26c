// Builds the browser bundles with esbuild into the directory given
// (default dist/): sparkhost.js, the client as one ES module, and game.js,
// the game page's script, with index.html beside it. The output depends
// only on the sources and the versions pinned in package-lock.json.
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const out = process.argv[2] ?? "dist";
mkdirSync(out, { recursive: true });
const common = { tsconfig: "tsconfig.browser.json", bundle: true, format: "esm", platform: "browser", target: "es2022", minify: true, legalComments: "none", logLevel: "warning" };
await esbuild.build({ ...common, entryPoints: ["src/browser.ts"], outfile: join(out, "sparkhost.js") });
await esbuild.build({ ...common, entryPoints: ["web/game.ts"], outfile: join(out, "game.js") });
copyFileSync("web/index.html", join(out, "index.html"));
