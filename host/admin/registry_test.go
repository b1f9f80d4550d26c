package admin

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func echoCommand(name, owner string) Command {
	return Command{
		Name: name, Usage: "[WORDS...]", Help: "print the words, one per line", Owner: owner,
		Run: func(args []string) (string, error) { return strings.Join(args, "|"), nil },
	}
}

func mustRegister(t *testing.T, r *Registry, c Command) {
	t.Helper()
	if err := r.Register(c); err != nil {
		t.Fatalf("Register(%q): %v", c.Name, err)
	}
}

func TestRegistryExecuteSplitsArguments(t *testing.T) {
	r := NewRegistry()
	mustRegister(t, r, echoCommand("echo", "m1"))
	out, err := r.Execute(`echo a 'b c' "d \"e\"" f\ g`)
	if err != nil || out != `a|b c|d "e"|f g` {
		t.Fatalf("Execute = %q, %v", out, err)
	}
}

func TestRegistryEmptyLine(t *testing.T) {
	r := NewRegistry()
	for _, line := range []string{"", "   ", "\t\r"} {
		if out, err := r.Execute(line); out != "" || err != nil {
			t.Errorf("Execute(%q) = %q, %v; want \"\", nil", line, out, err)
		}
	}
}

func TestRegistryUnknownCommand(t *testing.T) {
	r := NewRegistry()
	_, err := r.Execute("foo bar")
	if err == nil || err.Error() != `unknown command "foo"; type help for the list` || !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("err = %v", err)
	}
}

func TestRegistrySyntaxError(t *testing.T) {
	r := NewRegistry()
	mustRegister(t, r, echoCommand("echo", "m1"))
	_, err := r.Execute(`echo "unclosed`)
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "unterminated double quote at byte 5") {
		t.Fatalf("err = %v", err)
	}
}

func TestRegistryDuplicateNamesBothOwners(t *testing.T) {
	r := NewRegistry()
	mustRegister(t, r, echoCommand("echo", "m1"))
	err := r.Register(echoCommand("echo", "m2"))
	if !errors.Is(err, ErrDuplicateCommand) {
		t.Fatalf("err = %v; want ErrDuplicateCommand", err)
	}
	for _, want := range []string{`module "m1"`, `module "m2"`, `"echo"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	err = r.Register(echoCommand("help", "m2"))
	if !errors.Is(err, ErrDuplicateCommand) || !strings.Contains(err.Error(), "builtin") {
		t.Errorf("registering help: %v", err)
	}
	if out, _ := r.Execute("echo x"); out != "x" {
		t.Errorf("the first echo was replaced: %q", out)
	}
}

func TestRegistryRejectsInvalidCommands(t *testing.T) {
	ok := echoCommand("ok", "m1")
	cases := map[string]func(c *Command){
		"empty name":      func(c *Command) { c.Name = "" },
		"upper case":      func(c *Command) { c.Name = "Kick" },
		"space":           func(c *Command) { c.Name = "kick all" },
		"leading digit":   func(c *Command) { c.Name = "1up" },
		"leading dash":    func(c *Command) { c.Name = "-x" },
		"slash":           func(c *Command) { c.Name = "a/b" },
		"non-ascii":       func(c *Command) { c.Name = "kíck" },
		"too long":        func(c *Command) { c.Name = strings.Repeat("a", maxNameLen+1) },
		"no owner":        func(c *Command) { c.Owner = "" },
		"no run function": func(c *Command) { c.Run = nil },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewRegistry()
			c := ok
			mutate(&c)
			if err := r.Register(c); !errors.Is(err, ErrInvalidCommand) {
				t.Fatalf("Register = %v; want ErrInvalidCommand", err)
			}
			if len(r.Commands()) != 1 {
				t.Fatalf("an invalid command was registered")
			}
		})
	}
	for _, name := range []string{"a", "map", "mod.kick", "end-match", "x_1", strings.Repeat("a", maxNameLen)} {
		if err := NewRegistry().Register(echoCommand(name, "m1")); err != nil {
			t.Errorf("Register(%q): %v", name, err)
		}
	}
}

func TestRegistryUnregisterOwner(t *testing.T) {
	r := NewRegistry()
	mustRegister(t, r, echoCommand("a", "m1"))
	mustRegister(t, r, echoCommand("b", "m1"))
	mustRegister(t, r, echoCommand("c", "m2"))
	r.UnregisterOwner("m1")
	var names []string
	for _, c := range r.Commands() {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "c,help" {
		t.Fatalf("commands after unloading m1: %s", got)
	}
	if _, err := r.Execute("a"); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("a still runs: %v", err)
	}
	mustRegister(t, r, echoCommand("a", "m3")) // the name is free again
	r.UnregisterOwner("nobody")
	if len(r.Commands()) != 3 {
		t.Errorf("UnregisterOwner of an unknown owner removed something")
	}
}

func TestRegistryHelp(t *testing.T) {
	r := NewRegistry()
	mustRegister(t, r, Command{Name: "kick", Usage: "ID|NAME [REASON...]", Help: "disconnect a player\nThe reason is shown to them.", Owner: Builtin,
		Run: func([]string) (string, error) { return "", nil }})
	mustRegister(t, r, Command{Name: "status", Help: "server summary", Owner: "m1",
		Run: func([]string) (string, error) { return "", nil }})

	out, err := r.Execute("help")
	if err != nil {
		t.Fatal(err)
	}
	// One line per command, sorted, help texts in one column.
	lines := strings.Split(out, "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "help [COMMAND] ") || !strings.HasPrefix(lines[1], "kick ID|NAME [REASON...] ") ||
		!strings.HasPrefix(lines[2], "status ") || !strings.HasSuffix(lines[1], "disconnect a player") {
		t.Fatalf("help =\n%s", out)
	}
	col := strings.Index(lines[0], "list")
	if strings.Index(lines[1], "disconnect") != col || strings.Index(lines[2], "server") != col {
		t.Errorf("help columns not aligned:\n%s", out)
	}

	out, err = r.Execute("help kick")
	if err != nil || out != "usage: kick ID|NAME [REASON...]\ndisconnect a player\nThe reason is shown to them.\n(from the host (builtin))" {
		t.Errorf("help kick = %q, %v", out, err)
	}
	out, err = r.Execute("help status")
	if err != nil || out != "usage: status\nserver summary\n(from module \"m1\")" {
		t.Errorf("help status = %q, %v", out, err)
	}
	if _, err := r.Execute("help nope"); err == nil || err.Error() != `unknown command "nope"; type help for the list` {
		t.Errorf("help nope: %v", err)
	}
	if _, err := r.Execute("help a b"); err == nil || err.Error() != "help takes at most one command name; usage: help [COMMAND]" {
		t.Errorf("help a b: %v", err)
	}
}

func TestRegistryUsageErrors(t *testing.T) {
	r := NewRegistry()
	run := func(args []string) (string, error) {
		switch {
		case len(args) == 0:
			return "partial output is dropped", UsageError()
		case args[0] == "detail":
			return "", UsageError("not a duration", `"5x"`)
		case args[0] == "wrapped":
			return "", fmt.Errorf("while parsing: %w", UsageError())
		}
		return "ok", nil
	}
	mustRegister(t, r, Command{Name: "ban", Usage: "IP [DURATION]", Owner: Builtin, Run: run})
	mustRegister(t, r, Command{Name: "status", Owner: Builtin, Run: func([]string) (string, error) { return "", UsageError() }})
	cases := []struct{ line, want string }{
		{"ban", "usage: ban IP [DURATION]"},
		{"ban detail", `not a duration "5x"; usage: ban IP [DURATION]`},
		{"ban wrapped", "usage: ban IP [DURATION]"},
		{"status", "usage: status"},
	}
	for _, tc := range cases {
		out, err := r.Execute(tc.line)
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrUsage) || out != "" {
			t.Errorf("Execute(%q) = %q, %v; want usage error %q", tc.line, out, err, tc.want)
		}
	}
	if UsageError().Error() != "wrong arguments; see help" {
		t.Errorf("a bare UsageError reads %q", UsageError())
	}
}

func TestRegistryCommandErrorPassesThrough(t *testing.T) {
	r := NewRegistry()
	sentinel := errors.New("no player \"bob\"; see players")
	mustRegister(t, r, Command{Name: "kick", Owner: Builtin, Run: func([]string) (string, error) { return "", sentinel }})
	if _, err := r.Execute("kick bob"); err != sentinel {
		t.Fatalf("err = %v", err)
	}
}

func TestRegistryPanicIsAnErrorAndCounted(t *testing.T) {
	r := NewRegistry()
	mustRegister(t, r, Command{Name: "boom", Owner: "m1", Run: func([]string) (string, error) { panic("nil map") }})
	for i := 1; i <= 2; i++ {
		out, err := r.Execute("boom")
		if err == nil || out != "" || !strings.Contains(err.Error(), `command "boom" failed`) || !strings.Contains(err.Error(), "nil map") {
			t.Fatalf("Execute = %q, %v", out, err)
		}
		if r.Faults() != uint64(i) {
			t.Fatalf("Faults = %d; want %d", r.Faults(), i)
		}
	}
}

func TestRegistryCommandMayUseTheRegistry(t *testing.T) {
	r := NewRegistry()
	mustRegister(t, r, Command{Name: "load", Owner: Builtin, Run: func([]string) (string, error) {
		return fmt.Sprint(len(r.Commands())), r.Register(echoCommand("echo", "m1"))
	}})
	if out, err := r.Execute("load"); err != nil || out != "2" {
		t.Fatalf("load = %q, %v", out, err)
	}
	if out, err := r.Execute("echo hi"); err != nil || out != "hi" {
		t.Fatalf("echo = %q, %v", out, err)
	}
}

func TestRegistryConcurrentUse(t *testing.T) {
	r := NewRegistry()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("m%d", g)
			for i := range 100 {
				r.Register(echoCommand(fmt.Sprintf("c%d-%d", g, i%5), owner))
				r.Execute(fmt.Sprintf("c%d-%d x", g, i%5))
				r.Execute("help")
				if i%10 == 9 {
					r.UnregisterOwner(owner)
				}
			}
		}()
	}
	wg.Wait()
	if len(r.Commands()) != 1 {
		t.Fatalf("left over: %d commands", len(r.Commands()))
	}
}
