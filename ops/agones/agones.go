// Package agones runs sparkhost as an Agones GameServer: it speaks the Agones
// SDK sidecar's documented local HTTP API (the REST gateway of the SDK
// service; the Go SDK module is not needed). Ready is sent once the server
// serves and its modules run, Health on an interval driven by the game
// thread's ticks (a stuck tick loop stops the pings, and Agones marks the
// GameServer Unhealthy), labels name the map and the mode, and Shutdown ends
// a match-based GameServer.
//
// The game thread only ever does non-blocking channel sends; every HTTP call
// happens on the adapter's own goroutine, with retries while the sidecar
// starts (the sidecar may come up after the game server).
package agones

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultPort           = 9358 // the sidecar's HTTP port when AGONES_SDK_HTTP_PORT is unset
	DefaultHealthInterval = 2 * time.Second
	PortEnv               = "AGONES_SDK_HTTP_PORT"
)

// Config configures an Adapter. Zero values mean the documented defaults.
type Config struct {
	// Port is the sidecar's HTTP port (0 = $AGONES_SDK_HTTP_PORT, else 9358).
	Port int
	// HealthInterval is the period of the health pings (0 = 2 s).
	HealthInterval time.Duration
	Log            *slog.Logger // nil = slog.Default()
	// Getenv reads the environment (nil = os.Getenv).
	Getenv func(string) string
}

// Adapter is the connection to the sidecar.
type Adapter struct {
	cfg    Config
	base   string
	client *http.Client
	log    *slog.Logger

	ready    chan struct{} // closed by Ready
	readyOne sync.Once
	health   chan struct{} // one pending ping at most
	shutdown chan struct{}
	shutOne  sync.Once
	shutSent chan struct{} // closed once the Shutdown call was made (or given up)
	labels   chan struct{}

	mu      sync.Mutex
	pending map[metaKey]string // labels and annotations not yet sent

	lastPing time.Time // game thread
	stop     chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// Start begins talking to the sidecar at 127.0.0.1 on the configured port.
func Start(cfg Config) *Adapter {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
		if p, err := strconv.Atoi(cfg.Getenv(PortEnv)); err == nil && p > 0 && p < 65536 {
			cfg.Port = p
		}
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = DefaultHealthInterval
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Adapter{
		cfg: cfg, base: fmt.Sprintf("http://127.0.0.1:%d", cfg.Port), log: cfg.Log.With("component", "agones"),
		client: &http.Client{Timeout: 2 * time.Second},
		ready:  make(chan struct{}), health: make(chan struct{}, 1), shutdown: make(chan struct{}), shutSent: make(chan struct{}), labels: make(chan struct{}, 1),
		pending: make(map[metaKey]string), stop: make(chan struct{}), ctx: ctx, cancel: cancel,
	}
	a.wg.Add(1)
	go a.run()
	return a
}

// Port is the sidecar port in use.
func (a *Adapter) Port() int { return a.cfg.Port }

// Ready tells Agones the server takes players (once; later calls do nothing).
func (a *Adapter) Ready() { a.readyOne.Do(func() { close(a.ready) }) }

// Tick is called by the game thread every tick: when the health interval has
// passed it queues one health ping, without blocking.
func (a *Adapter) Tick(now time.Time) {
	if now.Sub(a.lastPing) < a.cfg.HealthInterval {
		return
	}
	a.lastPing = now
	select {
	case a.health <- struct{}{}:
	default: // a ping is still on its way
	}
}

// metaKey names one piece of GameServer metadata: a label or an
// annotation (the sidecar path) and its key.
type metaKey struct{ path, key string }

// Sidecar paths of the metadata.
const (
	labelPath      = "/metadata/label"
	annotationPath = "/metadata/annotation"
)

// SetLabel sets a GameServer label (agones.dev/sdk-KEY); the value is made a
// valid Kubernetes label value. Non-blocking: the newest value per key is
// sent. Metadata set before Ready is sent before Ready.
func (a *Adapter) SetLabel(key, value string) { a.setMeta(metaKey{labelPath, key}, LabelValue(value)) }

// SetAnnotation sets a GameServer annotation (agones.dev/sdk-KEY) to value
// as it is: annotations take any text (the identity pin, which a label
// value cannot hold). Non-blocking, as SetLabel; set before Ready, it is
// on the GameServer before Agones sees it Ready, so whoever allocates a
// Ready GameServer finds it.
func (a *Adapter) SetAnnotation(key, value string) { a.setMeta(metaKey{annotationPath, key}, value) }

func (a *Adapter) setMeta(k metaKey, value string) {
	a.mu.Lock()
	a.pending[k] = value
	a.mu.Unlock()
	select {
	case a.labels <- struct{}{}:
	default:
	}
}

// Shutdown asks Agones to shut the GameServer down (once).
func (a *Adapter) Shutdown() { a.shutOne.Do(func() { close(a.shutdown) }) }

// closeGrace bounds how long Close waits for a Shutdown asked for just
// before (a drain that ends asks, then the server stops at once).
const closeGrace = 3 * time.Second

// Close stops the adapter; calls in flight are abandoned, except a
// Shutdown asked for after Ready, which Close waits for (closeGrace at
// most): the last thing a server that drained tells Agones.
func (a *Adapter) Close() {
	select {
	case <-a.shutdown:
		select {
		case <-a.ready:
			select {
			case <-a.shutSent:
			case <-time.After(closeGrace):
			}
		default:
		}
	default:
	}
	close(a.stop)
	a.cancel()
	a.wg.Wait()
}

func (a *Adapter) run() {
	defer a.wg.Done()
	select {
	case <-a.ready:
	case <-a.stop:
		return
	}
	a.sendLabels() // what was set before Ready (the pin) is there when it is
	if !a.retry("ready", func() error { return a.post("/ready", struct{}{}) }) {
		return
	}
	a.log.Info("told Agones the server is Ready", "sdk", a.base)
	a.sendLabels()
	shutdown := a.shutdown
	for {
		select {
		case <-a.stop:
			return
		case <-a.health:
			if err := a.post("/health", struct{}{}); err != nil {
				a.log.Warn("Agones health ping failed; the GameServer turns Unhealthy if this goes on", "err", err)
			}
		case <-a.labels:
			a.sendLabels()
		case <-shutdown:
			shutdown = nil
			if a.retry("shutdown", func() error { return a.post("/shutdown", struct{}{}) }) {
				a.log.Info("asked Agones to shut the GameServer down")
			}
			close(a.shutSent)
		}
	}
}

func (a *Adapter) sendLabels() {
	a.mu.Lock()
	meta := a.pending
	a.pending = make(map[metaKey]string)
	a.mu.Unlock()
	for k, v := range meta {
		body := map[string]string{"key": k.key, "value": v}
		if !a.retry(k.path+" "+k.key, func() error { return a.put(k.path, body) }) {
			return
		}
	}
}

// retry calls fn until it succeeds or the adapter stops (false), backing off
// from 100 ms to 5 s; the first failure is logged once, the recovery too.
func (a *Adapter) retry(what string, fn func() error) bool {
	wait := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil {
			if attempt > 0 {
				a.log.Info("reached the Agones sidecar", "call", what, "attempts", attempt+1)
			}
			return true
		}
		if attempt == 0 {
			a.log.Warn("Agones sidecar not reachable yet; retrying (is the SDK server running beside this container?)",
				"call", what, "sdk", a.base, "err", err)
		}
		select {
		case <-a.stop:
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

func (a *Adapter) post(path string, body any) error { return a.call(http.MethodPost, path, body) }
func (a *Adapter) put(path string, body any) error  { return a.call(http.MethodPut, path, body) }

func (a *Adapter) call(method, path string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(a.ctx, method, a.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return nil
}

// LabelValue makes s a valid Kubernetes label value: at most 63 characters
// of [A-Za-z0-9_.-], beginning and ending with a letter or digit (others
// become "_"; an empty result is "none").
func LabelValue(s string) string {
	b := []byte(s)
	if len(b) > 63 {
		b = b[:63]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	for len(b) > 0 && !alnum(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && !alnum(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "none"
	}
	return string(b)
}
