// Package pluginhost runs a Go plugin module (a program built with package
// plugin) as a subprocess under hashicorp/go-plugin, over gRPC with
// automatic mutual TLS, and makes it a module.Module: the manager and the
// rest of the server cannot tell it from a Lua module.
//
// Per tick the adapter makes one Step call carrying every event of the tick
// and applies the actions that come back. A plugin that exits, panics or
// misses its tick deadline is killed (with its whole process group, so no
// grandchild outlives it) and reported as module.ErrCrashed; the manager
// unregisters its types, keeps the players connected and starts a fresh
// process after a backoff. go-plugin never restarts a client: every start
// is a new client and a new process.
package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sparkhost/sparkhost/internal/pluginwire"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Defaults of Config.
const (
	DefaultTickDeadline = 250 * time.Millisecond
	DefaultStartTimeout = 10 * time.Second
	shutdownTimeout     = time.Second
	pingEvery           = time.Second
)

// Config says how to run one plugin.
type Config struct {
	// Path is the plugin executable; Args are its arguments (a built-in
	// module is the sparkhost binary itself with a hidden sub-command).
	Path string
	Args []string
	// Source is how the operator named the module (shown in messages);
	// Path if empty.
	Source string
	// SHA256, if set, is the expected SHA-256 of the executable in hex; a
	// file that does not match is not started.
	SHA256 string
	// TickDeadline is how long one Step may take before the plugin is
	// killed as hung (0 = 250 ms).
	TickDeadline time.Duration
	// StartTimeout bounds the handshake and Init (0 = 10 s).
	StartTimeout time.Duration
	// Log is the server's logger; plugin records go to it with the
	// module's name and their level.
	Log *slog.Logger
}

// Module is a running plugin process as a module.Module. It is created by
// New and started by Load; each restart is a new Module.
type Module struct {
	cfg  Config
	hash string

	client *goplugin.Client
	cmd    *exec.Cmd
	rpc    pluginv1.ModuleClient
	host   module.Host
	logs   *logBridge
	tail   *tailWriter

	req      pluginv1.StepRequest
	evs      []pluginv1.Event
	evp      []*pluginv1.Event
	lastPing time.Time
	dead     error // set once the process is gone
	metrics  []module.MetricValue
}

var _ module.Module = (*Module)(nil)

// New returns an unstarted plugin module.
func New(cfg Config) (*Module, error) {
	if cfg.TickDeadline <= 0 {
		cfg.TickDeadline = DefaultTickDeadline
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Source == "" {
		cfg.Source = cfg.Path
	}
	return &Module{cfg: cfg}, nil
}

// CodeHash is the SHA-256 of the plugin executable (after Load).
func (m *Module) CodeHash() string { return m.hash }

// Pid is the plugin process id (0 before Load or after it is gone).
func (m *Module) Pid() int {
	if m.cmd == nil || m.cmd.Process == nil || m.dead != nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// FileSHA256 returns the hex SHA-256 of a file.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Load verifies the executable, starts the process, completes the
// versioned handshake and runs the module's Init.
func (m *Module) Load(h module.Host) (module.Manifest, error) {
	m.host = h
	path, err := exec.LookPath(m.cfg.Path)
	if err != nil {
		return module.Manifest{}, err
	}
	if m.hash, err = FileSHA256(path); err != nil {
		return module.Manifest{}, err
	}
	if want := strings.ToLower(m.cfg.SHA256); want != "" && want != m.hash {
		return module.Manifest{}, fmt.Errorf("checksum mismatch: config expects sha256 %s, the file has %s; deploy the intended build or update [modules.sha256]",
			want, m.hash)
	}
	m.logs = newLogBridge(m.cfg.Log, m.cfg.Source)
	m.tail = newTailWriter(64)
	m.cmd = exec.Command(path, m.cfg.Args...)
	m.cmd.SysProcAttr = sysProcAttr()
	m.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  pluginwire.Handshake(),
		VersionedPlugins: pluginwire.PluginSet(nil),
		Cmd:              m.cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     m.cfg.StartTimeout,
		Logger:           m.logs.hclog(),
		Stderr:           m.tail,
		SyncStdout:       m.logs.lines("stdout"),
		SyncStderr:       m.logs.lines("stderr"),
	})
	man, err := m.start()
	if err != nil {
		m.kill()
		return module.Manifest{}, err
	}
	m.logs.setName(man.Name)
	return man, nil
}

var versionRE = regexp.MustCompile(`Plugin version: (\d+)`)

func (m *Module) start() (module.Manifest, error) {
	rpc, err := m.client.Client()
	if err != nil {
		if v := versionRE.FindStringSubmatch(err.Error()); v != nil {
			return module.Manifest{}, fmt.Errorf("the plugin speaks sparkhost plugin protocol %s, this server speaks %d: rebuild the plugin against the github.com/sparkhost/sparkhost/plugin SDK of this server's release",
				v[1], pluginwire.ProtocolVersion())
		}
		if detail := m.tail.crash(); detail != "" {
			return module.Manifest{}, fmt.Errorf("the plugin process died while starting: %s", detail)
		}
		return module.Manifest{}, fmt.Errorf("no plugin handshake (is it a sparkhost plugin built with plugin.Serve?): %v", err)
	}
	raw, err := rpc.Dispense(pluginwire.PluginName)
	if err != nil {
		return module.Manifest{}, err
	}
	m.rpc = raw.(pluginv1.ModuleClient)
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.StartTimeout)
	defer cancel()
	ids := m.host.EntityIDs()
	resp, err := m.rpc.Init(ctx, &pluginv1.InitRequest{
		Protocol: uint32(pluginwire.ProtocolVersion()), Server: serverToPB(m.host.Server()),
		EntityIdFirst: ids.First, EntityIdLast: ids.Last,
	})
	if err != nil {
		return module.Manifest{}, fmt.Errorf("init: %s: %w", m.describeFailure(err), module.ErrCrashed)
	}
	if resp.GetError() != "" {
		return module.Manifest{}, fmt.Errorf("the module refused to start: %s", resp.GetError())
	}
	man, err := manifestFromPB(resp.GetManifest())
	if err != nil {
		return module.Manifest{}, err
	}
	if m.metrics, err = metricsFromPB(resp.GetManifest()); err != nil {
		return module.Manifest{}, err
	}
	m.apply(resp.GetActions())
	return man, nil
}

// Step sends the tick's events in one call and applies the actions.
func (m *Module) Step(t module.Tick, events []module.Event) error {
	if m.dead != nil {
		return m.dead
	}
	req := &m.req
	req.Tick, req.DtNs, req.NowUnixNs = t.Number, int64(t.DT), t.Now.UnixNano()
	deadline := time.Now().Add(m.cfg.TickDeadline)
	req.DeadlineUnixNs = deadline.UnixNano()
	if req.Server == nil {
		req.Server = &pluginv1.ServerInfo{}
	}
	fillServer(req.Server, m.host.Server())
	req.Events = m.events(events)
	req.Pings = req.Pings[:0]
	if t.Now.Sub(m.lastPing) >= pingEvery {
		m.lastPing = t.Now
		for _, c := range m.host.Clients() {
			req.Pings = append(req.Pings, &pluginv1.ClientPing{Client: c.ID, PingNs: int64(c.Ping)})
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	resp, err := m.rpc.Step(ctx, req)
	cancel()
	clear(m.evs) // drop payload references
	if err != nil {
		return m.crashed(err)
	}
	m.apply(resp.GetActions())
	m.applyMetrics(resp.GetMetrics())
	return nil
}

// events converts the batch, reusing the request's event storage.
func (m *Module) events(events []module.Event) []*pluginv1.Event {
	if cap(m.evs) < len(events) {
		m.evs = make([]pluginv1.Event, len(events), 2*len(events))
		m.evp = make([]*pluginv1.Event, len(events), 2*len(events))
	}
	m.evs, m.evp = m.evs[:len(events)], m.evp[:len(events)]
	for i := range events {
		ev, pe := &events[i], &m.evs[i]
		m.evp[i] = pe
		pe.Client = ev.Client
		switch ev.Kind {
		case module.EventAdmitted:
			pe.Kind = pluginv1.EventKind_EVENT_ADMITTED
			ci, _ := m.host.Client(ev.Client)
			ci.ID, ci.Name = ev.Client, ev.Name
			pe.Info = clientToPB(ci)
		case module.EventLeft:
			pe.Kind, pe.Reason = pluginv1.EventKind_EVENT_LEFT, uint32(ev.Reason)
		case module.EventMessage:
			pe.Kind, pe.Type, pe.Payload = pluginv1.EventKind_EVENT_MESSAGE, uint32(ev.Type), ev.Payload
		case module.EventMatchStart:
			pe.Kind, pe.Payload = pluginv1.EventKind_EVENT_MATCH_START, gamemsg.AppendMatchStart(nil, &ev.Match)
		case module.EventMatchEnd:
			pe.Kind, pe.Payload = pluginv1.EventKind_EVENT_MATCH_END, gamemsg.AppendMatchEnd(nil, &ev.MatchEnd)
		case module.EventMapChange:
			pe.Kind, pe.Map, pe.MapIndex = pluginv1.EventKind_EVENT_MAP_CHANGE, ev.Map, int32(ev.MapIndex)
		case module.EventInput:
			pe.Kind, pe.Payload = pluginv1.EventKind_EVENT_INPUT, gamemsg.AppendClientInput(nil, &ev.Input)
		}
	}
	return m.evp
}

// Command runs a console command in the plugin.
func (m *Module) Command(name string, args []string) (string, error) {
	if m.dead != nil {
		return "", m.dead
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.TickDeadline)
	defer cancel()
	resp, err := m.rpc.Command(ctx, &pluginv1.CommandRequest{Name: name, Args: args})
	if err != nil {
		return "", m.crashed(err)
	}
	m.apply(resp.GetActions())
	if resp.GetError() != "" {
		return resp.GetOutput(), errors.New(resp.GetError())
	}
	return resp.GetOutput(), nil
}

// Unload asks the plugin to shut down, then ends the process and its
// process group and waits for it.
func (m *Module) Unload() error {
	if m.client == nil {
		return nil
	}
	if m.dead == nil && m.rpc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		resp, err := m.rpc.Shutdown(ctx, &pluginv1.ShutdownRequest{})
		cancel()
		if err == nil {
			m.apply(resp.GetActions())
		}
	}
	m.kill()
	return nil
}

// kill ends the process group at once and reaps the plugin.
func (m *Module) kill() {
	if m.dead == nil {
		m.dead = fmt.Errorf("plugin %s was stopped: %w", m.cfg.Source, module.ErrCrashed)
	}
	if m.cmd != nil && m.cmd.Process != nil {
		killGroup(m.cmd.Process.Pid)
	}
	m.client.Kill() // closes the connection, waits for the process and its log readers
	if m.cmd != nil && m.cmd.Process != nil {
		killGroup(m.cmd.Process.Pid) // grandchildren that were still starting
	}
}

// crashed turns a failed call into the crash the manager restarts from.
func (m *Module) crashed(err error) error {
	detail := m.describeFailure(err)
	m.kill()
	m.dead = fmt.Errorf("%s: %w", detail, module.ErrCrashed)
	return m.dead
}

// describeFailure says why a call failed: a missed deadline, a panic (its
// message from the plugin's stderr), or how the process ended.
func (m *Module) describeFailure(err error) string {
	if status.Code(err) == codes.DeadlineExceeded {
		return fmt.Sprintf("missed its tick deadline (%v) and was killed", m.cfg.TickDeadline)
	}
	// Give the process a moment to be reaped so its status can be told.
	for i := 0; i < 50 && !m.client.Exited(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	var b strings.Builder
	b.WriteString("plugin process ")
	if m.client.Exited() && m.cmd.ProcessState != nil {
		b.WriteString("exited: " + m.cmd.ProcessState.String())
	} else {
		b.WriteString("stopped answering: " + status.Convert(err).Message())
	}
	if p := m.tail.crash(); p != "" {
		b.WriteString(" (" + p + ")")
	}
	return b.String()
}

// apply carries out a batch of actions through the module's Host, in order.
func (m *Module) apply(acts []*pluginv1.Action) {
	h := m.host
	for _, a := range acts {
		var err error
		switch a.GetKind() {
		case pluginv1.ActionKind_ACTION_SEND:
			err = h.Send(a.GetClient(), wire.MessageType(a.GetType()), a.GetPayload())
		case pluginv1.ActionKind_ACTION_BROADCAST:
			err = h.BroadcastExcept(a.GetClient(), wire.MessageType(a.GetType()), a.GetPayload())
		case pluginv1.ActionKind_ACTION_KICK:
			err = h.Kick(a.GetClient(), a.GetText())
		case pluginv1.ActionKind_ACTION_SCORE:
			h.AddScore(a.GetClient(), a.GetScore(), a.GetKills(), a.GetDeaths())
		case pluginv1.ActionKind_ACTION_FAULT:
			h.Fault(errors.New(a.GetText()))
		case pluginv1.ActionKind_ACTION_ENTITY_SPAWN, pluginv1.ActionKind_ACTION_ENTITY_UPDATE,
			pluginv1.ActionKind_ACTION_ENTITY_DESTROY, pluginv1.ActionKind_ACTION_ENTITY_OWNER,
			pluginv1.ActionKind_ACTION_ENTITY_PARTY, pluginv1.ActionKind_ACTION_CLIENT_VIEW:
			err = applyEntity(h, a)
		default:
			err = fmt.Errorf("unknown action kind %d", a.GetKind())
		}
		switch {
		case err == nil:
		case errors.Is(err, module.ErrNoClient):
			h.Log().Debug("plugin action for a client that is gone", "action", a.GetKind().String(), "client", a.GetClient())
		default:
			h.Fault(fmt.Errorf("%s: %w", a.GetKind(), err))
		}
	}
}

// applyEntity carries out one entity action.
func applyEntity(h module.Host, a *pluginv1.Action) error {
	var vals []gamemsg.FieldValue
	if len(a.GetFields()) > 0 {
		var err error
		if vals, err = pluginwire.ParseFieldValues(a.GetFields()); err != nil {
			return err
		}
	}
	id := a.GetEntity()
	switch a.GetKind() {
	case pluginv1.ActionKind_ACTION_ENTITY_SPAWN:
		switch {
		case id == 0:
			return errors.New("spawn without an id (the SDK picks ids in the module's block)")
		case a.GetEntityType() > 0xFFFF:
			return fmt.Errorf("entity type %d out of range", a.GetEntityType())
		}
		_, err := h.SpawnEntity(module.Spawn{
			ID: id, Type: uint16(a.GetEntityType()), Owner: a.GetClient(), Party: a.GetParty(),
			Position: pluginwire.Vec3FromPB(a.GetPosition()), Global: a.GetGlobal(), Fields: vals,
		})
		return err
	case pluginv1.ActionKind_ACTION_ENTITY_UPDATE:
		if a.GetPosition() != nil {
			if err := h.SetEntityPosition(id, pluginwire.Vec3FromPB(a.GetPosition()), a.GetTeleport()); err != nil {
				return err
			}
		}
		if len(vals) > 0 {
			return h.SetEntityFields(id, vals...)
		}
		return nil
	case pluginv1.ActionKind_ACTION_ENTITY_DESTROY:
		return h.DestroyEntity(id)
	case pluginv1.ActionKind_ACTION_ENTITY_OWNER:
		return h.SetEntityOwner(id, a.GetClient())
	case pluginv1.ActionKind_ACTION_ENTITY_PARTY:
		return h.SetEntityParty(id, a.GetParty())
	default: // ACTION_CLIENT_VIEW
		return h.SetClientView(a.GetClient(), module.ClientView{Party: a.GetParty(), Spectator: a.GetSpectator(), Focus: id})
	}
}
