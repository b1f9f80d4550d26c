package webpage

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHandlerServesThePage: "/" is the page, which loads game.js from the
// same origin; the scripts are JavaScript; anything else is 404.
func TestHandlerServesThePage(t *testing.T) {
	h := Handler()
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}
	if w := get("/"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `<script type="module" src="game.js">`) {
		t.Errorf("/: %d %.200q", w.Code, w.Body.String())
	}
	for _, js := range []string{"/game.js", "/sparkhost.js"} {
		w := get(js)
		if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), "javascript") || w.Body.Len() < 10000 {
			t.Errorf("%s: %d, %q, %d bytes", js, w.Code, w.Header().Get("Content-Type"), w.Body.Len())
		}
	}
	if w := get("/nothing"); w.Code != http.StatusNotFound {
		t.Errorf("/nothing: %d, want 404", w.Code)
	}
}
