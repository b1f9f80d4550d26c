package host_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/transport"
	"github.com/sparkhost/sparkhost/netstack/transport/web"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func withWeb(c *config.Config) { c.Web.Enabled, c.Web.Port = true, 0 }

// TestWebPublished: with [web] on, the certificate hashes are the same in
// /web.json, /status and the Agones annotation; /status tells the web
// port and endpoints; a client over each web transport is admitted (the pin
// checked) and counted in /status.
func TestWebPublished(t *testing.T) {
	sc := newAgonesSidecar(t)
	srv, _ := startHost(t, func(c *config.Config) {
		withOps(c)
		withWeb(c)
		c.Agones.Enabled, c.Agones.SDKPort, c.Agones.HealthSeconds = true, sc.port(), 0.1
	})
	info, ok := srv.WebInfo()
	if !ok || info.Pin != srv.Pin() || info.WebTransport == nil || info.WebSocket == nil || len(info.WebTransport.CertHashes) != 2 {
		t.Fatalf("web info %+v", info)
	}
	var hashes []string
	var pinned [][32]byte
	for _, h := range info.WebTransport.CertHashes {
		hashes = append(hashes, h.Value)
		b, _ := base64.StdEncoding.DecodeString(h.Value)
		pinned = append(pinned, [32]byte(b))
	}
	annotation := `PUT /metadata/annotation {"key":"web-cert-hashes","value":"` + strings.Join(hashes, ",") + `"}`
	eventually(t, "the web-cert-hashes annotation", func() bool { return slices.Contains(sc.snapshot(), annotation) })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wt, err := web.DialWebTransport(ctx, fmt.Sprintf("https://127.0.0.1:%d/wt", info.Port), web.ClientOptions{CertHashes: pinned})
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Close()
	ws, err := web.DialWebSocket(ctx, fmt.Sprintf("ws://127.0.0.1:%d/ws", info.Port), web.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for name, c := range map[string]*web.Client{"wt": wt, "ws": ws} {
		cli, err := netstack.Dial(ctx, netstack.ClientConfig{Server: c.Peer(), Name: name, Pin: srv.Pin(), Transport: transport.Transport(c),
			Registry: gamemsg.NewRegistry(), Welcome: gamemsg.TypeGameStateSync})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer cli.Close()
	}

	var st struct {
		Web struct {
			Port         int      `json:"port"`
			WebTransport string   `json:"webtransport"`
			WebSocket    string   `json:"websocket"`
			CertHashes   []string `json:"cert_hashes"`
			Sessions     int      `json:"sessions"`
		} `json:"web"`
	}
	_, body := get(t, opsURL(t, srv, "/status"))
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if st.Web.Port != info.Port || st.Web.WebTransport != "/wt" || st.Web.WebSocket != "/ws" || !slices.Equal(st.Web.CertHashes, hashes) || st.Web.Sessions != 2 {
		t.Fatalf("/status web %+v; want port %d, /wt, /ws, hashes %v, 2 sessions", st.Web, info.Port, hashes)
	}
}

// TestWebOffByDefault: without [web], /status has no web object and
// nothing listens.
func TestWebOffByDefault(t *testing.T) {
	srv, _ := startHost(t, withOps)
	if _, ok := srv.WebInfo(); ok || srv.WebLine() != "" || srv.WebPort() != 0 {
		t.Fatal("web transports on by default")
	}
	if _, body := get(t, opsURL(t, srv, "/status")); strings.Contains(body, `"web"`) {
		t.Fatalf("/status names web: %s", body)
	}
}
