package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/internal/udprelay"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// metricsOfResumption: two resumable players lose their path; one comes
// back within the hold (resumed), the other's hold runs out (expired: it
// left then) and its late resumption is refused ResumeExpired.
func metricsOfResumption(t *testing.T) *host.Server {
	srv, _ := startHostWith(t, host.Options{}, func(c *config.Config) {
		withOps(c)
		c.Server.ClientTimeout, c.Server.HeartbeatInterval = 1, 0.2
		c.Network.ResumeSeconds = 3
		c.Server.MaxClients = 2
	})
	relay, err := udprelay.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	back := dialResumable(t, srv, relay, "back")
	late := dialResumable(t, srv, relay, "late")
	s := await(t, srv, "two tickets", func(s scraped) bool { return s.v("sparkhost_net_resume_tickets_total") == 2 })
	s.want("sparkhost_net_resume_tickets_total", 2)

	relay.SetDark(true)
	<-back.Done()
	<-late.Done()
	s = await(t, srv, "two seats held", func(s scraped) bool { return s.v("sparkhost_net_seats_held") == 2 })
	s.want("sparkhost_net_seats_held", 2)
	s.want("sparkhost_net_seat_holds_total", 2)
	relay.SetDark(false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, err := back.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	s = await(t, srv, "one resumed, one hold expired", func(s scraped) bool {
		return s.v("sparkhost_net_resumptions_total", "result=resumed") == 1 && s.v("sparkhost_net_seat_holds_expired_total") == 1
	})
	s.want("sparkhost_net_resumptions_total", 1, "result=resumed")
	s.want("sparkhost_net_seat_holds_expired_total", 1)
	s.want("sparkhost_net_seats_held", 0)
	s.want("sparkhost_net_resume_tickets_total", 3) // and one more to the resumed session
	// The late one's window is over: the client knows it and says so.
	if _, err := late.Resume(ctx); !errors.Is(err, netstack.ErrNotResumable) {
		t.Fatalf("late resume: %v", err)
	}
	s.want("sparkhost_net_resumptions_total", 0, "result=expired")
	s.want("sparkhost_net_resumptions_total", 0, "result=invalid")
	metricsOfAdmissionRefusals(t, srv)
	return srv
}

// metricsOfAdmissionRefusals: where a held seat may come back, a draining
// or full server lets a hello on and refuses the newcomer at admission.
// A drain while back's match runs (called off again); then woke fills the
// server (max_clients 2), its path goes dark, its seat is held, a
// newcomer is refused ServerFull at admission; woke's client, whose own
// timeout is long, is heard again: its seat wakes.
func metricsOfAdmissionRefusals(t *testing.T, srv *host.Server) {
	eventually(t, "a match in progress", func() bool { return srv.Stats().MatchState == gamemsg.MatchInProgress })
	if _, err := srv.Exec("drain 60s"); err != nil {
		t.Fatal(err)
	}
	wantRefusedAtAdmission(t, srv, "newcomer", wire.DisconnectServerDraining)
	if _, err := srv.Exec("drain cancel"); err != nil {
		t.Fatal(err)
	}
	s := await(t, srv, "a refusal at admission", func(s scraped) bool {
		return s.v("sparkhost_net_admissions_refused_total", "reason=server_draining") == 1
	})
	s.want("sparkhost_net_admissions_refused_total", 1, "reason=server_draining")
	s.want("sparkhost_net_admissions_refused_total", 0, "reason=server_full")

	relay, err := udprelay.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relay.Close)
	woke := dialResumableWith(t, srv, relay, "woke", 30*time.Second)
	relay.SetDark(true)
	await(t, srv, "woke's seat held", func(s scraped) bool { return s.v("sparkhost_net_seats_held") == 1 })
	wantRefusedAtAdmission(t, srv, "extra", wire.DisconnectServerFull)
	eventually(t, "woke away on /status", func() bool { return heldOnStatus(t, srv)["woke"] && !heldOnStatus(t, srv)["back"] })
	relay.SetDark(false)
	s = await(t, srv, "woke's seat awake", func(s scraped) bool {
		return s.v("sparkhost_net_seat_holds_woken_total") == 1 && s.v("sparkhost_net_seats_held") == 0
	})
	s.want("sparkhost_net_seat_holds_woken_total", 1)
	s.want("sparkhost_net_admissions_refused_total", 1, "reason=server_full")
	s.want("sparkhost_net_resumptions_total", 1, "result=resumed") // waking is not resuming
	if heldOnStatus(t, srv)["woke"] {
		t.Error("/status: woke still away after its seat woke")
	}
	select {
	case <-woke.Done():
		t.Fatal("woke's connection ended")
	default:
	}
}

// wantRefusedAtAdmission dials a new player and checks it is refused with
// a Disconnect of reason after its ClientFinished.
func wantRefusedAtAdmission(t *testing.T, srv *host.Server, name string, reason wire.DisconnectReason) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := netstack.Dial(ctx, netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin()})
	var he *netstack.HandshakeError
	if !errors.As(err, &he) || he.Code != netstack.HandshakeRefusedName || he.Disconnect != reason {
		t.Fatalf("%s: %v, want refused %v at admission", name, err, reason)
	}
}

// heldOnStatus reads /status: which players are away (seat held).
func heldOnStatus(t *testing.T, srv *host.Server) map[string]bool {
	t.Helper()
	_, body := get(t, opsURL(t, srv, "/status"))
	var st struct {
		Players []struct {
			Name string `json:"name"`
			Held bool   `json:"held"`
		} `json:"player_list"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/status: %v", err)
	}
	held := map[string]bool{}
	for _, p := range st.Players {
		held[p.Name] = p.Held
	}
	return held
}
