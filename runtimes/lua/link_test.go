package lua

import (
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
)

// TestLuaClientLink: spark.client(id) carries the server's view of the
// client's link (the back-pressure signal), so that a script sends a
// backlogged client less.
func TestLuaClientLink(t *testing.T) {
	hs := load(t, writeScript(t, "link.lua", `
spark.module{name = "link"}
spark.command("link", "", "", function(id)
  local c = spark.client(tonumber(id))
  return string.format("%s %.0f %.2f %.0f %.0f %.0f", tostring(c.backlogged), c.rtt_var_ms, c.loss,
    c.bandwidth, c.send_rate, c.queue_delay_ms)
end)
`), Config{})
	hs.h.admit(7, "slow")
	c := hs.h.clients[7]
	c.Link = module.Link{RTTVariance: 40 * time.Millisecond, Loss: 0.08, Bandwidth: 30000, SendRate: 27000,
		QueueDelay: 120 * time.Millisecond, Backlogged: true}
	hs.h.clients[7] = c
	if got, want := hs.command("link", "7"), "true 40 0.08 30000 27000 120"; got != want {
		t.Fatalf("spark.client(7) link: %q; want %q", got, want)
	}
}
