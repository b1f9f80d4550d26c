package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
	pluginv1 "github.com/sparkhost/sparkhost/proto/pluginv1"
)

// TestSDKClientLink: the link figures a step's ClientPing carries (the
// server's congestion control: the back-pressure signal) reach the
// module's Host.Client and Host.Clients.
func TestSDKClientLink(t *testing.T) {
	r, m := newTestRuntime(t)
	step(t, r, 1, &pluginv1.Event{Kind: pluginv1.EventKind_EVENT_ADMITTED, Client: 4, Info: &pluginv1.ClientInfo{Name: "p"}})
	var got module.ClientInfo
	var all []module.ClientInfo
	m.onTick = func(h module.Host) {
		got, _ = h.Client(4)
		all = h.Clients()
	}
	now := time.Unix(1000, 0)
	_, err := r.Step(context.Background(), &pluginv1.StepRequest{Tick: 2, NowUnixNs: now.UnixNano(),
		Pings: []*pluginv1.ClientPing{{Client: 4, PingNs: int64(300 * time.Millisecond), RttVarNs: int64(40 * time.Millisecond),
			Loss: 0.08, Bandwidth: 30000, SendRate: 27000, QueueDelayNs: int64(120 * time.Millisecond), Backlogged: true}}})
	if err != nil {
		t.Fatal(err)
	}
	want := module.Link{RTTVariance: 40 * time.Millisecond, Loss: 0.08, Bandwidth: 30000, SendRate: 27000,
		QueueDelay: 120 * time.Millisecond, Backlogged: true}
	if got.Ping != 300*time.Millisecond || got.Link != want {
		t.Fatalf("client: ping %v, link %+v; want 300ms, %+v", got.Ping, got.Link, want)
	}
	if len(all) != 1 || all[0].Link != want {
		t.Fatalf("clients %+v", all)
	}
}
