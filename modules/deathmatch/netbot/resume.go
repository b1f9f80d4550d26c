package netbot

import (
	"context"

	"github.com/sparkhost/sparkhost/netstack"
)

// client is the bot's connection now.
func (b *Bot) client() *netstack.Client { return b.conn.Load() }

// resume tries to bring the bot back to its seat after its connection
// timed out (docs/protocol.md §3.15): it reports whether it did.
func (b *Bot) resume(ctx context.Context) bool {
	old := b.client()
	if _, ok := old.Resumable(); !ok {
		return false
	}
	fn := b.cfg.Resume
	if fn == nil {
		fn = func(ctx context.Context, c *netstack.Client) (*netstack.Client, error) { return c.Resume(ctx) }
	}
	nc, err := fn(ctx, old)
	if err != nil {
		return false
	}
	b.conn.Store(nc)
	b.mu.Lock()
	b.st.Resumed++
	b.mu.Unlock()
	return true
}
