package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Defaults of Config.
const (
	DefaultStall   = 5 * time.Second
	DefaultHistory = 600 // samples: ten minutes
)

// Config configures a Server. Zero values mean the documented defaults.
type Config struct {
	// Listen is the "host:port" to serve on; checked by host/config (loopback
	// unless the operator consented to another address).
	Listen string
	Source Source
	Tick   *TickRecorder
	// Stall is how long the tick loop may go without finishing a tick
	// before /healthz fails (0 = 5 s).
	Stall time.Duration
	// History is how many per-second samples the page plots (0 = 600).
	History int
	// SampleEvery is the sampling period (0 = one second; tests may not
	// change what a sample means, only how often one is taken).
	SampleEvery time.Duration
	Log         *slog.Logger // nil = slog.Default()
}

// Server is the operator's HTTP listener.
type Server struct {
	cfg     Config
	ln      net.Listener
	http    *http.Server
	hist    *History
	started time.Time
	stop    chan struct{}
	wg      sync.WaitGroup
}

// Listen binds cfg.Listen and serves /metrics, /healthz, /readyz, the
// status page and its JSON until Close.
func Listen(cfg Config) (*Server, error) {
	if cfg.Source == nil || cfg.Tick == nil {
		return nil, errors.New("ops: Listen needs a Source and a TickRecorder")
	}
	if cfg.Stall <= 0 {
		cfg.Stall = DefaultStall
	}
	if cfg.History <= 0 {
		cfg.History = DefaultHistory
	}
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("ops listener on %s: %w (change ops.listen, or free the port)", cfg.Listen, err)
	}
	s := &Server{cfg: cfg, ln: ln, hist: NewHistory(cfg.History), started: time.Now(), stop: make(chan struct{})}
	s.http = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(cfg.Log.Handler(), slog.LevelDebug)}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Log.Error("ops listener stopped; metrics and probes are unavailable", "err", err)
		}
	}()
	go s.sampleLoop()
	return s, nil
}

// Addr is the address the listener is bound to.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// History is the per-second samples the page plots.
func (s *Server) History() *History { return s.hist }

// Close stops the listener and the sampler.
func (s *Server) Close() error {
	close(s.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	s.wg.Wait()
	return err
}

func (s *Server) sampleLoop() {
	defer s.wg.Done()
	p := sampler{src: s.cfg.Source, tick: s.cfg.Tick, hist: s.hist}
	p.sample(time.Now())
	t := time.NewTicker(s.cfg.SampleEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			p.sample(now)
		}
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	reg := newRegistry(s.cfg.Source, s.cfg.Tick, s.cfg.Log)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.cfg.Log.Handler(), slog.LevelWarn)}))
	mux.HandleFunc("GET /healthz", s.probe(s.health))
	mux.HandleFunc("GET /readyz", s.probe(s.ready))
	mux.HandleFunc("GET /api/status", s.serveStatus)
	mux.HandleFunc("GET /status", s.serveStatus) // the same document, for tooling (the pin)
	mux.HandleFunc("GET /api/history", s.serveHistory)
	mux.Handle("GET /", pageHandler())
	return secure(mux)
}

// secure sets the headers every answer carries: nothing is cached, the
// page loads nothing from anywhere else.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.ServeHTTP(w, r)
	})
}

// probe answers 200 or 503 with one line saying why (Kubernetes reads the
// code; a person reads the line).
func (s *Server) probe(check func(time.Time) (bool, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		ok, why := check(time.Now())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, why)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
