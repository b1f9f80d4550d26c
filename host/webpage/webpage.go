// Package webpage is the browser game page a server serves on its web port
// when [web] is on: index.html, game.js (the page, built from
// clients/typescript/web with the browser client) and sparkhost.js (the
// browser client as one ES module, for pages of one's own).
//
// The built bundles are committed, so that a fresh clone's `go build` needs
// no npm; `go generate ./host/webpage` rebuilds them from the TypeScript
// sources with the versions pinned in clients/typescript/package-lock.json,
// and TestAssetsUpToDate fails when the committed ones are stale.
package webpage

//go:generate sh -c "cd ../../clients/typescript && npm ci --ignore-scripts --no-audit --no-fund && node build.mjs ../../host/webpage/assets"

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// FS is the page's files (index.html, game.js, sparkhost.js).
func FS() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded directory is there at build time
	}
	return sub
}

// Handler serves the page's files; "/" is index.html.
func Handler() http.Handler {
	files := http.FileServerFS(FS())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}
