package client_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/client"
)

// TestRoomCommandWithoutAnswerTimesOut: a room command waits for the
// server's answer at most Config.AnswerTimeout and then fails, saying so;
// it never hangs and never succeeds unanswered.
func TestRoomCommandWithoutAnswerTimesOut(t *testing.T) {
	srv := newTestServer(t, nil) // a transport without a lobby: it answers nothing
	c := newConsole(t, client.Config{Pin: srv.Pin(), AnswerTimeout: 200 * time.Millisecond})
	c.connect(t, srv, "alice")
	began := time.Now()
	err := c.Exec("room_leave")
	if err == nil || !strings.Contains(err.Error(), "room_leave: no answer from the server within 200ms") {
		t.Fatalf("room_leave unanswered: %v", err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("room_leave took %v with a 200ms timeout", d)
	}
}
