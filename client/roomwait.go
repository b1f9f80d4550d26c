package client

import (
	"fmt"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// DefaultAnswerTimeout is how long a room command waits for the server's
// answer when Config.AnswerTimeout is 0.
const DefaultAnswerTimeout = 10 * time.Second

// roomWaiter is the room command waiting for its answer: the RoomList for
// a RoomListRequest, else the RoomResult of its request type.
type roomWaiter struct {
	req wire.MessageType
	ch  chan *gamemsg.RoomResult // nil sent for a RoomList
}

// roomRequest sends a room request and waits until its answer has been
// printed. A refusal (a RoomResult other than OK) is an error, so a script
// stops there with exit code 1; so is no answer within the timeout (the
// server may have dropped the request over its rate limit).
func (c *Console) roomRequest(cmd string, t wire.MessageType, payload []byte) error {
	conn, err := c.current(cmd)
	if err != nil {
		return err
	}
	w := &roomWaiter{req: t, ch: make(chan *gamemsg.RoomResult, 1)}
	c.mu.Lock()
	c.roomWait = w
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.roomWait == w {
			c.roomWait = nil
		}
		c.mu.Unlock()
	}()
	if err := c.sendRoom(cmd, t, payload); err != nil {
		return err
	}
	timeout := c.cfg.AnswerTimeout
	if timeout <= 0 {
		timeout = DefaultAnswerTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	c.blocked.Add(1)
	defer c.blocked.Add(-1)
	select {
	case rr := <-w.ch:
		if rr != nil && rr.Code != gamemsg.RoomOK {
			if rr.Detail != "" {
				return fmt.Errorf("%s: refused: %s: %s", cmd, rr.Code, rr.Detail)
			}
			return fmt.Errorf("%s: refused: %s", cmd, rr.Code)
		}
		return nil
	case <-timer.C:
		return fmt.Errorf("%s: no answer from the server within %s; try again (requests over the server's rate limit are dropped)", cmd, timeout)
	case <-conn.client.Done():
		return fmt.Errorf("%s: %w", cmd, ErrNotConnected)
	case <-c.context().Done():
		return fmt.Errorf("%s: interrupted before the server answered", cmd)
	}
}

// answerRoom hands a printed answer to the command waiting for it, if any.
func (c *Console) answerRoom(req wire.MessageType, rr *gamemsg.RoomResult) {
	c.mu.Lock()
	w := c.roomWait
	if w != nil && w.req == req {
		c.roomWait = nil
	} else {
		w = nil
	}
	c.mu.Unlock()
	if w != nil {
		w.ch <- rr // buffered, and sent once
	}
}
