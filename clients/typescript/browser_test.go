package typescript_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/clients/typescript/tsgen"
)

var (
	npmOnce sync.Once
	npmDir  string
	npmErr  string
	npmSkip string
)

// browserBuilt copies the browser build's sources into a temporary
// directory, installs the packages of package-lock.json there (npm ci),
// type-checks the browser build with the pinned TypeScript and bundles it
// with the pinned esbuild (build.mjs) into out/. It skips without node and
// npm, unless SPARK_REQUIRE_BROWSER is set (.ci/run sets it).
func browserBuilt(t *testing.T) string {
	t.Helper()
	npmOnce.Do(func() {
		for _, tool := range []string{"node", "npm"} {
			if _, err := exec.LookPath(tool); err != nil {
				npmSkip = tool + " not found: install Node.js and npm (Debian: apt-get install nodejs npm) to build the browser client"
				return
			}
		}
		dir, err := os.MkdirTemp("", "tsbrowser")
		if err != nil {
			npmErr = err.Error()
			return
		}
		npmDir = dir
		for _, sub := range []string{"src", "web", "test"} {
			if err := copyDir(sub, filepath.Join(dir, sub)); err != nil {
				npmErr = err.Error()
				return
			}
		}
		for _, f := range []string{"package.json", "package-lock.json", "build.mjs", "tsconfig.browser.json", "web/index.html"} {
			if err := copyFile(f, filepath.Join(dir, f)); err != nil {
				npmErr = err.Error()
				return
			}
		}
		for _, step := range [][]string{
			{"npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"},
			{"node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.browser.json"},
			{"node", "build.mjs", "out"},
		} {
			if out, err := run(dir, 5*time.Minute, step...); err != nil {
				npmErr = strings.Join(step, " ") + ": " + err.Error() + "\n" + out
				return
			}
		}
	})
	if npmSkip != "" {
		if os.Getenv("SPARK_REQUIRE_BROWSER") != "" {
			t.Fatal("SPARK_REQUIRE_BROWSER is set: " + npmSkip)
		}
		t.Skip(npmSkip)
	}
	if npmErr != "" {
		t.Fatal(npmErr)
	}
	return npmDir
}

func run(dir string, limit time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestBrowserBundleIsCommitted: the page and client bundles embedded in
// the server (host/webpage/assets) are what the sources build to; `go
// generate ./host/webpage` rebuilds them.
func TestBrowserBundleIsCommitted(t *testing.T) {
	dir := browserBuilt(t)
	for _, f := range []string{"game.js", "sparkhost.js", "index.html"} {
		built, err := os.ReadFile(filepath.Join(dir, "out", f))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("..", "..", "host", "webpage", "assets", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(built, committed) {
			t.Errorf("host/webpage/assets/%s is stale: run go generate ./host/webpage and commit it", f)
		}
	}
}

// TestBrowserBundleHasNoNodeAPIs: the browser bundle requires nothing
// (no require("crypto"), no dgram, no process).
func TestBrowserBundleHasNoNodeAPIs(t *testing.T) {
	dir := browserBuilt(t)
	for _, f := range []string{"game.js", "sparkhost.js"} {
		b, err := os.ReadFile(filepath.Join(dir, "out", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{`\brequire\(`, `"dgram"`, `"(node:)?crypto"`, `\bprocess\.`, `\bBuffer\.`} {
			if m := regexp.MustCompile(bad).Find(b); m != nil {
				t.Errorf("%s contains %s: a Node API in the browser build", f, m)
			}
		}
	}
}

// TestBrowserGeneratedTypes: the game page's module types are what
// `sparkhost gen-ts --runtime ../../src/browser` makes of the export of
// scripts/tagarena.lua (and they type-check in the browser build, which
// browserBuilt ran).
func TestBrowserGeneratedTypes(t *testing.T) {
	in, err := exportModules("../../scripts/tagarena.lua")
	if err != nil {
		t.Fatal(err)
	}
	code, err := tsgen.GenerateWith(in, tsgen.Options{RuntimeImport: "../../src/browser"})
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("web/generated/tagarena.ts")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(code, committed) {
		t.Error("web/generated/tagarena.ts is not the generator's output for scripts/tagarena.lua: regenerate it (sparkhost schema export --module scripts/tagarena.lua | sparkhost gen-ts --runtime ../../src/browser -o clients/typescript/web/generated/tagarena.ts)")
	}
}

// TestBrowserCryptoMatchesVectors runs the protocol vectors and the room
// password vector over the browser's crypto provider (WebCrypto and the
// @noble packages), and the overflow stream's frame reader against split,
// hostile and random input, bundled by esbuild and run in Node, which has
// WebCrypto.
func TestBrowserCryptoMatchesVectors(t *testing.T) {
	dir := browserBuilt(t)
	vectors, _ := filepath.Abs("../../netstack/testdata")
	for _, c := range []struct{ script, want string }{
		{"test/browser_vectors.ts", "vectors ok (crypto: WebCrypto + @noble)"},
		{"test/browser_rooms.ts", "rooms ok (crypto: WebCrypto + @noble)"},
		{"test/browser_frames.ts", "frames ok"},
	} {
		js := filepath.Join(dir, "out", strings.TrimSuffix(filepath.Base(c.script), ".ts")+".cjs")
		if out, err := run(dir, time.Minute, "node_modules/.bin/esbuild", c.script, "--bundle", "--platform=node", "--log-level=warning", "--outfile="+js); err != nil {
			t.Fatalf("esbuild %s: %v\n%s", c.script, err, out)
		}
		out, err := run(dir, time.Minute, "node", js, vectors)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("%s: %v\n%s", c.script, err, out)
		}
	}
}
