package admin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"

	"github.com/sparkhost/sparkhost/module"
)

// Builtin is the Owner of the host's own commands, help among them.
const Builtin = "builtin"

// maxNameLen bounds a command name so that help stays one readable column.
const maxNameLen = module.MaxCommandNameLen

// Errors Register and Execute wrap; match them with errors.Is.
var (
	// ErrDuplicateCommand: a command of that name is already registered.
	ErrDuplicateCommand = errors.New("admin: duplicate command")
	// ErrInvalidCommand: a Command's name, owner or Run is unusable.
	ErrInvalidCommand = errors.New("admin: invalid command")
	// ErrUnknownCommand: Execute found no command of that name.
	ErrUnknownCommand = errors.New("unknown command")
	// ErrUsage: the command was given the wrong arguments.
	ErrUsage = errors.New("usage")
)

// Command is one admin command.
type Command struct {
	// Name is what the operator types: a lower-case letter, then lower-case
	// letters, digits, '-', '_' or '.', at most 32 bytes.
	Name string
	// Usage describes the arguments, e.g. "ID|NAME [REASON...]"; empty for
	// a command without arguments.
	Usage string
	// Help is one line saying what the command does; help shows the first
	// line in the list and all of it for `help NAME`.
	Help string
	// Owner is Builtin or the name of the module that registered the
	// command; UnregisterOwner removes a module's commands when it unloads.
	Owner string
	// Run executes the command with the arguments after its name. It returns
	// the text for the operator, or an error: UsageError(...) when the
	// arguments are wrong, any other error for a failure. A panic in Run is
	// recovered and reported as an error (see Registry.Faults).
	Run func(args []string) (string, error)
}

// Registry holds the admin commands by name. It is safe for concurrent use;
// Execute does not hold the registry's lock while a command runs, so a
// command may itself register, unregister or list commands.
type Registry struct {
	mu     sync.RWMutex
	cmds   map[string]Command
	faults atomic.Uint64
}

// NewRegistry returns a registry holding the built-in `help [COMMAND]`.
func NewRegistry() *Registry {
	r := &Registry{cmds: make(map[string]Command)}
	r.cmds["help"] = Command{
		Name:  "help",
		Usage: "[COMMAND]",
		Help:  "list the commands, or show what one command does",
		Owner: Builtin,
		Run:   r.help,
	}
	return r
}

// Register adds c. It fails, changing nothing, if the name is taken (the
// error names both owners) or if c's name, owner or Run is unusable.
func (r *Registry) Register(c Command) error {
	if err := checkCommand(c); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.cmds[c.Name]; ok {
		return fmt.Errorf("%w: %s cannot register %q: it is already registered by %s",
			ErrDuplicateCommand, describeOwner(c.Owner), c.Name, describeOwner(old.Owner))
	}
	r.cmds[c.Name] = c
	return nil
}

func checkCommand(c Command) error {
	if !ValidName(c.Name) {
		return fmt.Errorf("%w: name %q: use a lower-case letter, then lower-case letters, digits, '-', '_' or '.', at most %d bytes",
			ErrInvalidCommand, c.Name, maxNameLen)
	}
	if c.Owner == "" {
		return fmt.Errorf("%w %q: Owner must be %q or the registering module's name", ErrInvalidCommand, c.Name, Builtin)
	}
	if c.Run == nil {
		return fmt.Errorf("%w %q: Run is nil", ErrInvalidCommand, c.Name)
	}
	return nil
}

// ValidName reports whether name is a valid command name: the module
// contract's rule (module.ValidCommandName), which module names follow too.
func ValidName(name string) bool { return module.ValidCommandName(name) }

func describeOwner(owner string) string {
	if owner == Builtin {
		return "the host (builtin)"
	}
	return fmt.Sprintf("module %q", owner)
}

// UnregisterOwner removes every command registered by owner; a module's
// commands go when it unloads.
func (r *Registry) UnregisterOwner(owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, c := range r.cmds {
		if c.Owner == owner {
			delete(r.cmds, name)
		}
	}
}

// Commands returns the registered commands sorted by name.
func (r *Registry) Commands() []Command {
	r.mu.RLock()
	list := make([]Command, 0, len(r.cmds))
	for _, c := range r.cmds {
		list = append(list, c)
	}
	r.mu.RUnlock()
	slices.SortFunc(list, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })
	return list
}

// Faults returns how many times a command's Run has panicked. A panic is
// recovered and answered as an error, never a crash of the server.
func (r *Registry) Faults() uint64 { return r.faults.Load() }

func (r *Registry) lookup(name string) (Command, error) {
	r.mu.RLock()
	c, ok := r.cmds[name]
	r.mu.RUnlock()
	if !ok {
		return Command{}, fmt.Errorf("%w %q; type help for the list", ErrUnknownCommand, name)
	}
	return c, nil
}

// Execute runs one command line: it splits the line (SplitLine), looks up
// the first word and runs that command with the rest. An empty line answers
// "" and no error. Errors are meant for the operator as they are:
//
//	unknown command "foo"; type help for the list
//	usage: kick ID|NAME [REASON...]
//	unterminated double quote at byte 5; close it, or escape it with \
func (r *Registry) Execute(line string) (string, error) {
	words, err := SplitLine(line)
	if err != nil {
		return "", err
	}
	if len(words) == 0 {
		return "", nil
	}
	c, err := r.lookup(words[0])
	if err != nil {
		return "", err
	}
	out, err := r.run(c, words[1:])
	var ue *usageError
	if errors.As(err, &ue) {
		return "", ue.withCommand(c)
	}
	return out, err
}

// run calls c.Run, turning a panic into an error.
func (r *Registry) run(c Command, args []string) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.faults.Add(1)
			out, err = "", fmt.Errorf("command %q failed with an internal error (%v); it has been counted, see the server log", c.Name, p)
		}
	}()
	return c.Run(args)
}

func (r *Registry) help(args []string) (string, error) {
	switch len(args) {
	case 0:
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
		for _, c := range r.Commands() {
			first, _, _ := strings.Cut(c.Help, "\n")
			fmt.Fprintf(tw, "%s\t%s\n", strings.TrimSpace(c.Name+" "+c.Usage), first)
		}
		tw.Flush()
		return strings.TrimSuffix(b.String(), "\n"), nil
	case 1:
		c, err := r.lookup(args[0])
		if err != nil {
			return "", err
		}
		text := "usage: " + strings.TrimSpace(c.Name+" "+c.Usage)
		if c.Help != "" {
			text += "\n" + c.Help
		}
		return text + "\n(from " + describeOwner(c.Owner) + ")", nil
	}
	return "", UsageError("help takes at most one command name")
}

// UsageError is what a Command's Run returns when its arguments are wrong.
// Execute turns it into "usage: NAME USAGE", preceded by detail (joined
// with spaces) when given: `not a duration "5x"; usage: ban IP [DURATION]`.
func UsageError(detail ...string) error {
	return &usageError{detail: strings.Join(detail, " ")}
}

type usageError struct {
	detail string
	usage  string // "NAME USAGE", set by Execute
}

func (e *usageError) Error() string {
	msg := "usage: " + e.usage
	if e.usage == "" {
		msg = "wrong arguments; see help"
	}
	if e.detail != "" {
		msg = e.detail + "; " + msg
	}
	return msg
}

func (e *usageError) Unwrap() error { return ErrUsage }

func (e *usageError) withCommand(c Command) error {
	return &usageError{detail: e.detail, usage: strings.TrimSpace(c.Name + " " + c.Usage)}
}
