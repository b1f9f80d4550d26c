package host_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/internal/udprelay"
	"github.com/sparkhost/sparkhost/netstack"
)

// metricsOfResumption: two resumable players lose their path; one comes
// back within the hold (resumed), the other's hold runs out (expired: it
// left then) and its late resumption is refused ResumeExpired.
func metricsOfResumption(t *testing.T) *host.Server {
	srv, _ := startHostWith(t, host.Options{}, func(c *config.Config) {
		withOps(c)
		c.Server.ClientTimeout, c.Server.HeartbeatInterval = 1, 0.2
		c.Network.ResumeSeconds = 3
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
	return srv
}
