package modules

import (
	"fmt"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
)

// registerAdmin adds `module list | info NAME | load PATH | unload NAME |
// reload NAME` to the admin console.
func (m *Manager) registerAdmin() {
	err := m.cfg.Commands.Register(admin.Command{
		Name: "module", Usage: "list | info NAME | load NAME|PATH | unload NAME | reload NAME",
		Help: "manage game modules", Owner: admin.Builtin, Run: m.adminModule,
	})
	if err != nil {
		panic(err) // the name is fixed; a clash is a programming error
	}
}

func (m *Manager) adminModule(args []string) (string, error) {
	if len(args) == 0 {
		return "", admin.UsageError()
	}
	one := func() (string, error) {
		if len(args) != 2 {
			return "", admin.UsageError()
		}
		return args[1], nil
	}
	switch args[0] {
	case "list":
		return m.listText(), nil
	case "info":
		name, err := one()
		if err != nil {
			return "", err
		}
		return m.infoText(name)
	case "load":
		src, err := one()
		if err != nil {
			return "", err
		}
		if m.cfg.Resolve == nil {
			return "", fmt.Errorf("this server cannot load modules at run time")
		}
		spec, err := m.cfg.Resolve(src)
		if err != nil {
			return "", err
		}
		name, err := m.Load(spec)
		if err != nil {
			return "", err
		}
		return "loaded " + name, nil
	case "unload":
		name, err := one()
		if err != nil {
			return "", err
		}
		if err := m.Unload(name); err != nil {
			return "", err
		}
		return "unloaded " + name, nil
	case "reload":
		name, err := one()
		if err != nil {
			return "", err
		}
		if err := m.Reload(name); err != nil {
			return "", err
		}
		return "reloaded " + name, nil
	}
	return "", admin.UsageError(fmt.Sprintf("unknown subcommand %q", args[0]))
}

func (m *Manager) listText() string {
	mods := m.Modules()
	if len(mods) == 0 {
		return "no modules loaded"
	}
	var b strings.Builder
	for i, st := range mods {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s %s [%s] %s inbox %d/%d drops %d faults %d",
			st.Name, st.Version, st.Kind, m.stateText(st), st.InboxDepth, st.InboxCapacity, st.InboxDrops, st.Faults)
		if st.Restarts > 0 {
			fmt.Fprintf(&b, " restarts %d", st.Restarts)
		}
	}
	return b.String()
}

// stateText is the state as an operator reads it: "restarting in 2s" for a
// restarting module (rounded up to 100 ms), the bare state otherwise.
func (m *Manager) stateText(st Status) string {
	if st.State != StateRestarting {
		return st.State
	}
	left := max(st.NextRestart.Sub(m.now), 0)
	left = (left + 99*time.Millisecond).Truncate(100 * time.Millisecond)
	return "restarting in " + left.String()
}

func (m *Manager) infoText(name string) (string, error) {
	for _, st := range m.Modules() {
		if st.Name != name {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "name %s\nversion %s\nkind %s\nsource %s\nstate %s\ncode hash %s\n", st.Name, st.Version, st.Kind, st.Source, m.stateText(st), st.Hash)
		if st.PID != 0 {
			fmt.Fprintf(&b, "process %d\n", st.PID)
		}
		fmt.Fprintf(&b, "message types %v\ninbox %d/%d, drops %d\nfaults %d\nrestarts %d", st.Types, st.InboxDepth, st.InboxCapacity, st.InboxDrops, st.Faults, st.Restarts)
		if st.LastError != "" {
			fmt.Fprintf(&b, "\nlast error %s", st.LastError)
		}
		if len(st.Events) > 0 {
			b.WriteString("\nevents")
			for _, ev := range st.Events {
				fmt.Fprintf(&b, "\n  %s %s", ev.Time.Format("15:04:05.000"), ev.What)
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("%w %q; see module list", ErrNoModule, name)
}
