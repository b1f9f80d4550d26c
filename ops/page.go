package ops

import (
	"embed"
	"io/fs"
	"net/http"
)

// page holds the status page: one HTML file, a stylesheet and a script,
// hand-written, with nothing loaded from anywhere else (it works offline).
//
//go:embed page
var page embed.FS

// pageHandler serves / and /static/*.
func pageHandler() http.Handler {
	sub, _ := fs.Sub(page, "page")
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			http.ServeFileFS(w, r, sub, "index.html")
		case "/static/app.js", "/static/style.css":
			r2 := r.Clone(r.Context())
			r2.URL.Path = r.URL.Path[len("/static"):]
			files.ServeHTTP(w, r2)
		default:
			http.NotFound(w, r)
		}
	})
}
