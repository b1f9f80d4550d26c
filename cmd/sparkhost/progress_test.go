package main

import (
	"strings"
	"testing"
	"time"
)

func TestBotsProgress(t *testing.T) {
	var b strings.Builder
	now := time.Unix(0, 0)
	p := &progress{w: &b, every: time.Second, now: func() time.Time { return now }, last: now}
	for i := range 10 { // ten bots, 300 ms apart: a line each second
		p.botsIn(i, 0, 10)
		now = now.Add(300 * time.Millisecond)
	}
	p.botsIn(9, 1, 10) // within a second of the last line: quiet
	now = now.Add(time.Second)
	p.botsIn(9, 1, 10)
	want := "4 of 10 bots in, connecting...\n8 of 10 bots in, connecting...\n9 of 10 bots in (1 failed to connect), connecting...\n"
	if b.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", b.String(), want)
	}
}
