package main

import (
	"fmt"
	"io"
	"time"
)

// progress reports long work as it goes: at most one line a second, so a
// long run shows it is alive without flooding the console.
type progress struct {
	w     io.Writer
	every time.Duration
	last  time.Time
	now   func() time.Time
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, every: time.Second, now: time.Now, last: time.Now()}
}

// botsIn reports how many bots are in so far.
func (p *progress) botsIn(in, failed, total int) {
	if now := p.now(); now.Sub(p.last) >= p.every {
		p.last = now
		if failed > 0 {
			fmt.Fprintf(p.w, "%d of %d bots in (%d failed to connect), connecting...\n", in, total, failed)
		} else {
			fmt.Fprintf(p.w, "%d of %d bots in, connecting...\n", in, total)
		}
	}
}
