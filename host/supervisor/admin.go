package supervisor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
	"github.com/sparkhost/sparkhost/module"
)

// registerAdmin adds `module list | info NAME | load PATH | unload NAME |
// reload NAME` to the admin console.
func (m *Manager) registerAdmin() {
	err := m.cfg.Commands.Register(admin.Command{
		Name: "module", Usage: "list | info NAME[@ROOM] | load NAME|PATH | unload NAME | reload NAME",
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
		spec, err := m.specFor(src)
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

// specFor is what `module load ARG` starts: the module listed under that
// name (failed or restarting: started fresh, however it was first named —
// a path, a built-in name), else whatever Resolve makes of ARG.
func (m *Manager) specFor(arg string) (Spec, error) {
	if inst := m.find(arg); inst != nil {
		return inst.spec, nil
	}
	if m.cfg.Resolve == nil {
		return Spec{}, fmt.Errorf("this server cannot load modules at run time")
	}
	return m.cfg.Resolve(arg)
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
		fmt.Fprintf(&b, "%s %s [%s]%s %s inbox %d/%d drops %d faults %d",
			st.Name, st.Version, st.Kind, roomsText(st), m.stateText(st), st.InboxDepth, st.InboxCapacity, st.InboxDrops, st.Faults)
		if st.Restarts > 0 {
			fmt.Fprintf(&b, " restarts %d", st.Restarts)
		}
	}
	return b.String()
}

// roomsText names the rooms an instance serves: " room 3", " rooms 3,4"
// (one instance for both), nothing for the whole server.
func roomsText(st Status) string {
	if len(st.Rooms) == 0 {
		return ""
	}
	ids := make([]string, len(st.Rooms))
	for i, id := range st.Rooms {
		ids[i] = strconv.FormatUint(uint64(id), 10)
	}
	if st.MultiRoom {
		return " rooms " + strings.Join(ids, ",")
	}
	return " room " + strings.Join(ids, ",")
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

// infoText is `module info NAME[@ROOM]`: the instance of NAME in ROOM,
// else the first listed.
func (m *Manager) infoText(arg string) (string, error) {
	name, room, _ := strings.Cut(arg, "@")
	for _, st := range m.Modules() {
		if st.Name != name {
			continue
		}
		if room != "" && !slices.ContainsFunc(st.Rooms, func(id module.RoomID) bool { return strconv.FormatUint(uint64(id), 10) == room }) {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "name %s\nversion %s\nkind %s\nsource %s\nstate %s\ncode hash %s\n", st.Name, st.Version, st.Kind, st.Source, m.stateText(st), st.Hash)
		if r := roomsText(st); r != "" {
			fmt.Fprintf(&b, "%s\n", strings.TrimPrefix(r, " "))
		}
		if st.PID != 0 {
			fmt.Fprintf(&b, "process %d\n", st.PID)
		}
		typesText(&b, st.Messages)
		fmt.Fprintf(&b, "inbox %d/%d, drops %d, over the per-client limit %d\nfaults %d",
			st.InboxDepth, st.InboxCapacity, st.InboxDrops, st.OverLimit, st.Faults)
		if st.Panics > 0 {
			fmt.Fprintf(&b, " (panics %d)", st.Panics)
		}
		fmt.Fprintf(&b, "\nrestarts %d", st.Restarts)
		runtimeText(&b, st.Runtime)
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

// runtimeText adds the lines of a runtime's own figures (a plugin's) to
// `module info`; nothing for a runtime without them.
func runtimeText(b *strings.Builder, rs module.RuntimeStats) {
	if rs.AnswerTime > 0 || rs.LateAnswers > 0 || rs.HeldTicks > 0 {
		fmt.Fprintf(b, "\nanswers late %d, ticks held %d, answer time %v", rs.LateAnswers, rs.HeldTicks, rs.AnswerTime.Round(10*time.Microsecond))
		fmt.Fprintf(b, "\nticks waited for its answer %d, %v in all", rs.TickWaits, rs.TickWaitTime.Round(10*time.Microsecond))
	}
	if rs.MemoryLimit > 0 {
		fmt.Fprintf(b, "\nmemory %s resident of a %s cap", mib(rs.Resident), mib(rs.MemoryLimit))
	}
	if rs.LogDropped > 0 {
		fmt.Fprintf(b, "\nlog lines dropped %d", rs.LogDropped)
	}
}

// mib renders bytes as MiB with one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
