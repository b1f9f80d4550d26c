package client

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// DefaultWaitTimeout is how long wait waits when no TIMEOUT is given.
const DefaultWaitTimeout = 10 * time.Second

func builtinCommands() []Command {
	return []Command{
		{Name: "connect", Usage: "connect HOST:PORT NAME", Help: "connect as NAME (pin, else known_hosts with trust on first use)", Run: cmdConnect},
		{Name: "disconnect", Usage: "disconnect", Help: "leave the server (ClientQuit) once it confirmed what was sent (at most 1s)", Run: cmdDisconnect},
		{Name: "say", Usage: "say TEXT...", Help: "send a chat message", Run: cmdSay},
		{Name: "status", Usage: "status", Help: "connection state, server, id, name, ping and loss", Run: cmdStatus},
		{Name: "net_status", Usage: "net_status", Help: "ping, jitter, loss and bandwidth on one line", Run: cmdNetStatus},
		{Name: "net_stats", Usage: "net_stats", Help: "every statistics counter, one per line", Run: cmdNetStats},
		{Name: "entities", Usage: "entities", Help: "list the replicated entities: id, type, owner, position", Run: cmdEntities},
		{Name: "wait", Usage: "wait PATTERN [TIMEOUT]", Help: "wait for an event line matching the regexp PATTERN (TIMEOUT default 10s)", Run: cmdWait},
		{Name: "sleep", Usage: "sleep DURATION", Help: "pause, e.g. sleep 500ms", Run: cmdSleep},
		{Name: "quit", Usage: "quit", Help: "leave the server as disconnect does, then the console", Run: cmdQuit},
		{Name: "help", Usage: "help [COMMAND]", Help: "list the commands, or describe one", Run: cmdHelp},
	}
}

func usageError(usage string) error { return fmt.Errorf("usage: %s", usage) }

func cmdDisconnect(c *Console, args []string) error {
	if len(args) != 0 {
		return usageError("disconnect")
	}
	conn, err := c.current("disconnect")
	if err != nil {
		return err
	}
	if err := c.leave(conn); err != nil {
		return fmt.Errorf("disconnect: %w", err)
	}
	return nil
}

// leave closes conn: the server is told ClientQuit once it has confirmed
// what was sent (a line said just before), or after the linger (1 s); the
// error says so when it had not. It returns after the receive goroutine
// printed "disconnected: ClientQuit (...)".
func (c *Console) leave(conn *connection) error {
	conn.stopResuming()
	err := conn.client.Close()
	<-conn.recvDone
	return err
}

func cmdSay(c *Console, args []string) error {
	if len(args) == 0 {
		return usageError("say TEXT...")
	}
	text := strings.Join(args, " ")
	if !gamemsg.ValidChatText([]byte(text)) {
		return fmt.Errorf("say: chat text must be 1..%d bytes without control characters", gamemsg.MaxChatTextLen)
	}
	conn, err := c.current("say")
	if err != nil {
		return err
	}
	payload := gamemsg.AppendChatMessage(nil, &gamemsg.ChatMessage{Text: text})
	if err := conn.client.Send(gamemsg.TypeChatMessage, wire.Reliable, payload); err != nil {
		return fmt.Errorf("say: %w", err)
	}
	c.println("said: " + text)
	return nil
}

func cmdStatus(c *Console, args []string) error {
	if len(args) != 0 {
		return usageError("status")
	}
	c.mu.Lock()
	conn, dialing := c.conn, c.dialing
	c.mu.Unlock()
	switch {
	case conn != nil:
		st := conn.client.Stats()
		c.println(fmt.Sprintf("status: connected to %s as %s (id %d), ping %s, loss %.1f%%, protocol v%d",
			conn.server, conn.name, conn.client.ID(), msText(st.Ping), st.PacketLoss*100, conn.client.Protocol()))
	case dialing:
		c.println("status: connecting")
	default:
		c.println("status: disconnected")
	}
	return nil
}

func cmdNetStatus(c *Console, args []string) error {
	if len(args) != 0 {
		return usageError("net_status")
	}
	conn, err := c.current("net_status")
	if err != nil {
		return err
	}
	st := conn.client.Stats()
	c.println(fmt.Sprintf("net: ping %s, jitter %s, loss %.1f%%, up %.0f B/s, down %.0f B/s",
		msText(st.Ping), jitterText(st), st.PacketLoss*100, st.BandwidthUp, st.BandwidthDown))
	return nil
}

func cmdNetStats(c *Console, args []string) error {
	if len(args) != 0 {
		return usageError("net_stats")
	}
	conn, err := c.current("net_stats")
	if err != nil {
		return err
	}
	for _, line := range statsLines(conn.client.Stats()) {
		c.println(line)
	}
	return nil
}

// statsLines lists every §11/§13 statistic under its spec name.
func statsLines(st netstack.Stats) []string {
	return []string{
		"ping: " + msText(st.Ping),
		"jitter: " + jitterText(st),
		fmt.Sprintf("packetLoss: %.1f%%", st.PacketLoss*100),
		fmt.Sprintf("bytesSent: %d", st.BytesSent),
		fmt.Sprintf("bytesReceived: %d", st.BytesReceived),
		fmt.Sprintf("packetsSent: %d", st.PacketsSent),
		fmt.Sprintf("packetsReceived: %d", st.PacketsReceived),
		fmt.Sprintf("packetsDropped: %d", st.PacketsDropped),
		fmt.Sprintf("bandwidthUp: %.0f B/s", st.BandwidthUp),
		fmt.Sprintf("bandwidthDown: %.0f B/s", st.BandwidthDown),
		fmt.Sprintf("securityDrops: %d", st.SecurityDrops),
		fmt.Sprintf("plaintextFramesDropped: %d", st.PlaintextFramesDropped),
		fmt.Sprintf("malformedDropped: %d", st.MalformedDropped),
		fmt.Sprintf("policyDrops: %d", st.PolicyDrops),
		fmt.Sprintf("connectRateLimited: %d", st.ConnectRateLimited),
		fmt.Sprintf("retransmissions: %d", st.Retransmissions),
		fmt.Sprintf("inboxDrops: %d", st.InboxDrops),
		"rto: " + msText(st.RTO),
		fmt.Sprintf("messagesSent: %d", st.MessagesSent),
		fmt.Sprintf("messagesReceived: %d", st.MessagesReceived),
		fmt.Sprintf("messagesRefused: %d", st.MessagesRefused),
		fmt.Sprintf("refusedByServer: %d", st.PeerRefusals),
		// The link as this client sees it (congestion control: the server
		// estimates and paces its side; docs/operations.md).
		"srtt: " + msText(st.SRTT),
		"rttVariance: " + msText(st.RTTVariance),
		"minRtt: " + msText(st.MinRTT),
		fmt.Sprintf("estimatedBandwidthDown: %.0f B/s", st.BandwidthDown),
		"sendQueueDelay: " + fmt.Sprintf("%.1f ms", float64(st.SendQueueDelay)/float64(time.Millisecond)),
	}
}

// msText renders a duration in milliseconds; 0 means no measurement yet.
func msText(d time.Duration) string {
	if d == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// jitterText renders the jitter, which is known (possibly 0) once a ping is.
func jitterText(st netstack.Stats) string {
	if st.Ping == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f ms", float64(st.Jitter)/float64(time.Millisecond))
}

func cmdEntities(c *Console, args []string) error {
	if len(args) != 0 {
		return usageError("entities")
	}
	conn, err := c.current("entities")
	if err != nil {
		return err
	}
	ents := conn.world.Entities()
	if len(ents) == 0 {
		c.println("entities: none")
		return nil
	}
	for i := range ents {
		c.println("entity " + entityText(&ents[i]))
	}
	return nil
}

func cmdWait(c *Console, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return usageError("wait PATTERN [TIMEOUT]")
	}
	re, err := regexp.Compile(args[0])
	if err != nil {
		return fmt.Errorf("wait: pattern %q is not a Go regexp: %v", args[0], err)
	}
	timeout := DefaultWaitTimeout
	if len(args) == 2 {
		if timeout, err = parseDuration(args[1]); err != nil {
			return fmt.Errorf("wait: %w", err)
		}
	}
	c.blocked.Add(1)
	_, err = c.events.wait(c.context(), re, timeout)
	c.blocked.Add(-1)
	switch {
	case errors.Is(err, errWaitTimeout):
		return fmt.Errorf("wait: no event matching %q within %s", args[0], timeout)
	case err != nil:
		return fmt.Errorf("wait: interrupted before an event matched %q", args[0])
	}
	return nil
}

func cmdSleep(c *Console, args []string) error {
	if len(args) != 1 {
		return usageError("sleep DURATION")
	}
	d, err := parseDuration(args[0])
	if err != nil {
		return fmt.Errorf("sleep: %w", err)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	c.blocked.Add(1)
	defer c.blocked.Add(-1)
	select {
	case <-t.C:
		return nil
	case <-c.context().Done():
		return errors.New("sleep: interrupted")
	}
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration; write e.g. 5s or 300ms", s)
	}
	return d, nil
}

// cmdQuit leaves the server first, so that a script's exit code says
// whether what it sent was confirmed: the console ends either way.
func cmdQuit(c *Console, args []string) error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		if err := c.leave(conn); err != nil {
			return &quitError{err}
		}
	}
	return ErrQuit
}

// quitError is quit's error when leaving the server was not clean: it is
// ErrQuit (the console ends) and a failure (exit code 1).
type quitError struct{ err error }

func (e *quitError) Error() string        { return "quit: " + e.err.Error() }
func (e *quitError) Unwrap() error        { return e.err }
func (e *quitError) Is(target error) bool { return target == ErrQuit }

func cmdHelp(c *Console, args []string) error {
	c.mu.Lock()
	var cmds []Command
	for _, name := range c.order {
		if len(args) == 0 || args[0] == name {
			cmds = append(cmds, c.commands[name])
		}
	}
	c.mu.Unlock()
	if len(cmds) == 0 {
		return fmt.Errorf("help: %w %q; type help for the list", ErrUnknownCommand, args[0])
	}
	for _, cmd := range cmds {
		c.println(fmt.Sprintf("  %-26s %s", cmd.Usage, cmd.Help))
	}
	return nil
}
