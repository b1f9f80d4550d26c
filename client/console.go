package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Errors callers match.
var (
	// ErrQuit is returned by Exec for the quit command: the caller stops
	// reading commands. RunScript and RunInteractive treat it as success,
	// unless the error wrapping it says leaving the server was not clean
	// (netstack.ErrUnconfirmed: what was sent may not have arrived).
	ErrQuit = errors.New("client: quit")
	// ErrUnknownCommand is wrapped when a line names no registered command.
	ErrUnknownCommand = errors.New("unknown command")
	// ErrDuplicateCommand is wrapped when Register is given a taken name.
	ErrDuplicateCommand = errors.New("client: command already registered")
	// ErrConsoleClosed is returned by Exec after Close.
	ErrConsoleClosed = errors.New("client: console closed")
	// ErrNotConnected is wrapped by commands that need a connection.
	ErrNotConnected = errors.New("not connected; use connect HOST:PORT NAME first")
)

// Command is one console command.
type Command struct {
	Name  string // one word, no white space
	Usage string // e.g. "say TEXT..."
	Help  string // one line
	// Run executes the command; args excludes the name. A returned error is
	// printed as "error: ..." and fails a script.
	Run func(c *Console, args []string) error
}

// Config configures a Console. The zero value prints nowhere and connects
// only with a pin.
type Config struct {
	// Out receives every line the console prints; nil discards them.
	Out io.Writer
	// DataDir holds the known_hosts file used when Pin is empty; "" means a
	// pin is required to connect.
	DataDir string
	// Pin, when set ("ed25519:..."), is the only server identity accepted.
	Pin string
	// Registry holds the module message schemas the client understands;
	// nil = built-in types only.
	Registry *wire.Registry
	// Protocol is the handshake: 0 speaks v4 and falls back to v3 for a v3
	// server, 4 insists on v4, 3 speaks v3 only (netstack.ClientConfig).
	Protocol uint16
	// Timeout is the connection's liveness timeout: nothing heard from the
	// server for this long and the seat is resumed, or the connection
	// ends (0 = 10 s; heartbeats go five times as often).
	Timeout time.Duration
	// AnswerTimeout bounds a room command's wait for the server's answer
	// (0 = DefaultAnswerTimeout).
	AnswerTimeout time.Duration
}

// MessageHook is called for an incoming message of the type it was added for.
type MessageHook func(c *Console, m netstack.Message)

// connection is the current session and what the console knows about it.
type connection struct {
	client   *netstack.Client
	server   string // host:port as dialled
	name     string
	world    *World
	recvDone chan struct{} // closed when the receive goroutine has finished
	quit     chan struct{} // closed by leave: stop trying to resume (resume.go)
	quitOnce sync.Once
}

// Console is the player and test console: a command registry, one connection
// at a time, and the event log that wait reads. Its methods are safe for
// concurrent use; commands run on the caller's goroutine, incoming messages
// are printed on the console's receive goroutine.
type Console struct {
	cfg    Config
	outMu  sync.Mutex // one writer for every line, so lines never interleave
	out    io.Writer  // guarded by outMu
	events eventLog
	// blocked counts the commands blocked in a wait or a sleep (tests
	// use it to act once a command is known to wait).
	blocked atomic.Int32

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	mu        sync.Mutex // guards the fields below
	commands  map[string]Command
	order     []string // registration order, for help
	hooks     map[wire.MessageType][]MessageHook
	conn      *connection
	dialing   bool
	closed    bool
	known     map[uint32]gamemsg.RoomInfo      // rooms last heard of (rooms.go)
	roomWait  *roomWaiter                      // the room command waiting for its answer
	runCtx    context.Context                  // the running command's context (RunInteractive)
	interrupt context.CancelFunc               // ends the running command (Interrupt)
	editor    *lineEditor                      // RunInteractive's terminal while it runs
	resumed   []func(old, nc *netstack.Client) // resume.go: told when a seat is resumed
}

// NewConsole returns a console with the built-in commands registered.
func NewConsole(cfg Config) *Console {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	c := &Console{
		cfg:      cfg,
		out:      cfg.Out,
		commands: make(map[string]Command),
		hooks:    make(map[wire.MessageType][]MessageHook),
		known:    make(map[uint32]gamemsg.RoomInfo),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.events.init()
	for _, cmd := range append(append(builtinCommands(), roomCommands()...), moduleCommands()...) {
		if err := c.Register(cmd); err != nil {
			panic(err) // the built-in table is fixed: a duplicate is a programming error
		}
	}
	return c
}

// Register adds a command. It fails on an empty name, a name with white
// space, a nil Run, or a name already registered.
func (c *Console) Register(cmd Command) error {
	switch {
	case cmd.Name == "" || strings.ContainsFunc(cmd.Name, unicode.IsSpace):
		return fmt.Errorf("client: command name %q must be one word", cmd.Name)
	case cmd.Run == nil:
		return fmt.Errorf("client: command %q has no Run function", cmd.Name)
	}
	if cmd.Usage == "" {
		cmd.Usage = cmd.Name
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.commands[cmd.Name]; ok {
		return fmt.Errorf("%w: %q; pick another name", ErrDuplicateCommand, cmd.Name)
	}
	c.commands[cmd.Name] = cmd
	c.order = append(c.order, cmd.Name)
	return nil
}

// Exec runs one command line. Words are split like a shell: white space
// separates them, '...' is literal, "..." allows \" and \\, and a backslash
// outside quotes escapes the next character. A blank line or one starting
// with '#' does nothing. The quit command returns ErrQuit.
func (c *Console) Exec(line string) error {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	words, err := SplitWords(line)
	if err != nil {
		return err
	}
	if len(words) == 0 {
		return nil
	}
	c.mu.Lock()
	cmd, ok := c.commands[words[0]]
	closed := c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return ErrConsoleClosed
	case !ok:
		return fmt.Errorf("%w %q; type help for the list", ErrUnknownCommand, words[0])
	}
	return runCommand(c, cmd, words[1:])
}

// runCommand runs cmd, turning a panic of a module's command into an error.
func runCommand(c *Console, cmd Command, args []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: command failed: %v", cmd.Name, r)
		}
	}()
	return cmd.Run(c, args)
}

// Client returns the current connection, or nil when disconnected. Module
// commands use it to send their messages.
func (c *Console) Client() *netstack.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	return c.conn.client
}

// World returns the current connection's entities, or nil when
// disconnected.
func (c *Console) World() *World {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	return c.conn.world
}

// Printf prints an event line and records it for wait. A trailing newline is
// optional; a text of several lines is recorded line by line.
func (c *Console) Printf(format string, args ...any) {
	text := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	c.outMu.Lock()
	defer c.outMu.Unlock()
	for line := range strings.SplitSeq(text, "\n") {
		c.writeLineLocked(line)
		c.events.add(line)
	}
}

// Println prints a command's result line (not an event for wait): module
// commands print their one-line results with it.
func (c *Console) Println(line string) { c.println(line) }

// println prints a command's result line; it is not an event for wait.
func (c *Console) println(line string) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	c.writeLineLocked(line)
}

func (c *Console) writeLineLocked(line string) {
	io.WriteString(c.out, line+"\n")
}

// promptText is the interactive prompt.
const promptText = "> "

// OnMessage adds a hook for incoming messages of type t. Hooks run on the
// console's receive goroutine after the built-in printer, in the order added;
// they must not block (a hook that calls disconnect would wait for itself).
func (c *Console) OnMessage(t wire.MessageType, h MessageHook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks[t] = append(c.hooks[t], h)
}

// Close leaves the server as disconnect does (a warning line says when it
// did not confirm what was sent) and makes further Exec calls fail. A
// wait, sleep or connect in progress returns early. It is safe to call
// twice.
func (c *Console) Close() {
	c.cancel()
	c.mu.Lock()
	c.closed = true
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		if err := c.leave(conn); err != nil {
			c.Printf("warning: %v", err)
		}
	}
}

// Context is the context a command blocks under: it ends when the command
// is interrupted (Interrupt, Ctrl-C at the interactive console) or the
// console closes. Module commands pass it to what they wait for.
func (c *Console) Context() context.Context { return c.context() }

// context returns the context commands block under: RunInteractive's while
// it runs, else the console's own; both end at Close.
func (c *Console) context() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runCtx != nil {
		return c.runCtx
	}
	return c.ctx
}

// current returns the connection or ErrNotConnected wrapped with the command name.
func (c *Console) current(cmd string) (*connection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil, fmt.Errorf("%s: %w", cmd, ErrNotConnected)
	}
	return c.conn, nil
}
