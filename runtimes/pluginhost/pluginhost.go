// Package pluginhost runs a Go plugin module (a program built with package
// plugin) as a subprocess under hashicorp/go-plugin, over gRPC with
// automatic mutual TLS, and makes it a module.Module: the manager and the
// rest of the server cannot tell it from a Lua module.
//
// Per tick the adapter makes one Step call carrying every event of the tick
// and applies the actions that come back. The game thread never waits for a
// plugin longer than the tick's Deadline (the module budget): a later answer
// applies at a later tick, and while a call is out the next ticks' events
// are held and sent with the next call (step.go). A plugin that exits,
// panics, leaves a call unanswered for HangTimeout or outgrows its memory
// cap is killed (with its whole process group, so no grandchild outlives
// it) and reported as module.ErrCrashed; the manager unregisters its types,
// keeps the players connected and starts a fresh process after a backoff.
// go-plugin never restarts a client: every start is a new client and a new
// process.
//
// Everything a plugin sends is untrusted: actions are checked and applied
// under recover, its log lines are rate-limited, its memory is watched.
package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sparkhost/sparkhost/internal/pluginwire"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
)

// Defaults of Config.
const (
	DefaultHangTimeout       = 10 * time.Second
	DefaultCommandWait       = 100 * time.Millisecond
	DefaultLateWindow        = 10 * time.Second
	DefaultStartTimeout      = 10 * time.Second
	DefaultMemoryLimit       = 512 << 20
	DefaultLogLinesPerSecond = 100
	DefaultLogBurst          = 200
	shutdownTimeout          = time.Second
	pingEvery                = time.Second
)

// Config says how to run one plugin. Zero values mean the defaults.
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
	// HangTimeout is how long a call may go unanswered before the plugin
	// is killed as hung (0 = 10 s).
	HangTimeout time.Duration
	// CommandWait is how long a console command holds the game thread
	// waiting for the plugin's answer (0 = 100 ms); a later answer is
	// logged and its actions applied at the next tick.
	CommandWait time.Duration
	// LateWindow is the span of tick time over which lateness is judged: a
	// plugin whose events were held on more than half the ticks of a
	// window gets one fault for it (0 = 10 s).
	LateWindow time.Duration
	// StartTimeout bounds the handshake and Init (0 = 10 s).
	StartTimeout time.Duration
	// MemoryLimit is the plugin's memory cap in bytes, its resident size
	// and that of the processes it started (0 = 512 MiB). Its GOMEMLIMIT
	// is set to three quarters of it.
	MemoryLimit int64
	// LogLinesPerSecond and LogBurst bound what the plugin logs (0 = 100 a
	// second, bursts of 200).
	LogLinesPerSecond float64
	LogBurst          int
	// AnswerNextTick: Step never waits for the tick's answer; it is
	// applied at the start of the next Step if it is in by then (else that
	// tick is held; Step does not stop for it), so the plugin works
	// between ticks.
	AnswerNextTick bool
	// Nice lowers the plugin's CPU priority below the server's by this
	// Unix nice increment (0..19; 0 leaves it equal): every thread of the
	// process gets it once the process is up, and the threads and
	// processes it starts later inherit it. Under CPU contention the
	// scheduler then runs the server's tick first, instead of slicing the
	// core between the two (Linux only; elsewhere it has no effect).
	Nice int
	// Log is the server's logger; plugin records go to it with the
	// module's name and their level.
	Log *slog.Logger
}

// Module is a running plugin process as a module.Module. It is created by
// New and started by Load; each restart is a new Module. Its methods are for
// the game thread; RuntimeStats, CodeHash and Pid may be called from any.
type Module struct {
	cfg  Config
	hash string
	// nextTick: the manifest asks for its answers at the next tick
	// (module.Manifest.AnswersNextTick; set by launch, before Load returns).
	nextTick bool

	client *goplugin.Client
	cmd    *exec.Cmd
	rpc    pluginv1.ModuleClient
	host   module.Host
	logs   *logBridge
	tail   *tailWriter

	// ctx ends every call in flight when the plugin is killed.
	ctx    context.Context
	cancel context.CancelFunc
	steps  stepper           // the Step call in flight and the events held for the next (step.go)
	cmds   []*pendingCommand // commands whose answer came after CommandWait (command.go)
	memory *memoryWatch

	// killed is set by the memory watchdog when it killed the process: the
	// reason the game thread reports.
	killed   atomic.Pointer[string]
	name     string         // the module's name, from its manifest
	pings    pinger         // the clients whose link facts go with the next calls (pings.go)
	dead     error          // set once the process is gone
	prepared *preparedStart // Prepare's result, taken by Load
	metrics  []module.MetricValue
	// rooms are the Hosts of the rooms a plugin that serves many has open
	// (rooms.go); ticks is the Step request's storage for their facts.
	rooms map[module.RoomID]module.Host
	ticks []*pluginv1.RoomTick
}

var (
	_ module.Module     = (*Module)(nil)
	_ module.Backlogger = (*Module)(nil)
	_ module.Reporter   = (*Module)(nil)
	_ module.Process    = (*Module)(nil)
	_ module.CodeHasher = (*Module)(nil)
)

// New returns an unstarted plugin module.
func New(cfg Config) (*Module, error) {
	cfg.populate()
	return &Module{cfg: cfg}, nil
}

// populate fills the zero fields with their documented defaults: the one
// place they are decided.
func (cfg *Config) populate() {
	if cfg.HangTimeout <= 0 {
		cfg.HangTimeout = DefaultHangTimeout
	}
	if cfg.CommandWait <= 0 {
		cfg.CommandWait = DefaultCommandWait
	}
	if cfg.LateWindow <= 0 {
		cfg.LateWindow = DefaultLateWindow
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.MemoryLimit <= 0 {
		cfg.MemoryLimit = DefaultMemoryLimit
	}
	if cfg.LogLinesPerSecond <= 0 {
		cfg.LogLinesPerSecond = DefaultLogLinesPerSecond
	}
	if cfg.LogBurst <= 0 {
		cfg.LogBurst = DefaultLogBurst
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Source == "" {
		cfg.Source = cfg.Path
	}
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
	if m.prepared != nil { // Prepare did the slow part off the game thread
		p := m.prepared
		m.prepared = nil
		m.applyInit(p.manifest, p.room, p.actions)
		return p.manifest, nil
	}
	info := startInfo(h)
	man, actions, err := m.launch(info)
	if err != nil {
		return module.Manifest{}, err
	}
	m.applyInit(man, info.Server.Room.ID, actions)
	return man, nil
}

// startInfo is what a start through h is for: the Host's own account of
// it (module.Starter: the first room of a module that serves many), else
// its facts.
func startInfo(h module.Host) module.StartInfo {
	if s, ok := h.(module.Starter); ok {
		return s.StartInfo()
	}
	return module.StartInfo{Server: h.Server(), EntityIDs: h.EntityIDs()}
}

// applyInit applies Init's actions. A plugin that serves many rooms
// loaded the room it was started for during Init (plugin.ServeRooms), so
// its actions name that room: it is noted as open first.
func (m *Module) applyInit(man module.Manifest, room module.RoomID, actions []*pluginv1.Action) {
	if man.Rooms {
		m.openRoom(room)
	}
	m.apply(actions)
}

// answerNextTick reports whether Step leaves this tick's answer for the
// next: the operator's plugin_answers or the module's manifest says so.
func (m *Module) answerNextTick() bool { return m.cfg.AnswerNextTick || m.nextTick }

var _ module.Preparer = (*Module)(nil)

// Prepare launches the plugin and runs its Init off the game thread (the
// manager's restarts after a crash); Load then only applies Init's actions.
func (m *Module) Prepare(info module.StartInfo) error {
	man, actions, err := m.launch(info)
	if err != nil {
		return err
	}
	m.prepared = &preparedStart{manifest: man, room: info.Server.Room.ID, actions: actions}
	return nil
}

// preparedStart is what Prepare leaves for Load.
type preparedStart struct {
	manifest module.Manifest
	room     module.RoomID // the room the start was for
	actions  []*pluginv1.Action
}

// launch verifies the executable, starts the process, completes the
// versioned handshake and runs the module's Init; it returns Init's
// actions for the caller to apply on the game thread.
func (m *Module) launch(info module.StartInfo) (module.Manifest, []*pluginv1.Action, error) {
	fail := func(err error) (module.Manifest, []*pluginv1.Action, error) { return module.Manifest{}, nil, err }
	path, err := exec.LookPath(m.cfg.Path)
	if err != nil {
		return fail(err)
	}
	if m.hash, err = FileSHA256(path); err != nil {
		return fail(err)
	}
	if want := strings.ToLower(m.cfg.SHA256); want != "" && want != m.hash {
		return fail(fmt.Errorf("checksum mismatch: config expects sha256 %s, the file has %s; deploy the intended build or update [modules.sha256]",
			want, m.hash))
	}
	m.logs = newLogBridge(m.cfg.Log, m.cfg.Source, path, m.cfg.LogLinesPerSecond, m.cfg.LogBurst)
	m.tail = newTailWriter(64)
	m.cmd = exec.Command(path, m.cfg.Args...)
	m.cmd.SysProcAttr = sysProcAttr()
	m.cmd.Env = pluginEnv(os.Environ(), m.cfg.MemoryLimit)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  pluginwire.Handshake(),
		VersionedPlugins: pluginwire.PluginSet(nil),
		Cmd:              m.cmd,
		SkipHostEnv:      true, // cmd.Env is the server's environment with our GOMEMLIMIT
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     m.cfg.StartTimeout,
		Logger:           m.logs.hclog(),
		Stderr:           m.tail,
		SyncStdout:       m.logs.lines("stdout"),
		SyncStderr:       m.logs.lines("stderr"),
	})
	man, actions, err := m.start(info)
	if err != nil {
		m.kill()
		return fail(err)
	}
	if m.cfg.Nice > 0 {
		if err := lowerPriority(m.cmd.Process.Pid, m.cfg.Nice); err != nil {
			m.cfg.Log.Warn(fmt.Sprintf("module %s: could not lower its CPU priority by %d (%v): it competes with the server's tick as an equal", man.Name, m.cfg.Nice, err))
		}
	}
	m.logs.setName(man.Name)
	m.steps.start(m.ctx, m.rpc)
	m.name = man.Name
	m.memory = watchMemory(m.cmd.Process.Pid, m.cfg.MemoryLimit, m.client.Exited, &m.killed)
	return man, actions, nil
}

// pluginEnv is the server's environment for a plugin, with GOMEMLIMIT (the
// Go runtime's soft memory limit) at three quarters of the cap, so that
// the plugin's collector works harder well before the watchdog must kill
// it. An operator's own GOMEMLIMIT is replaced.
func pluginEnv(environ []string, limit int64) []string {
	env := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			env = append(env, kv)
		}
	}
	return append(env, "GOMEMLIMIT="+strconv.FormatInt(limit/4*3, 10))
}

var versionRE = regexp.MustCompile(`Plugin version: (\d+)`)

func (m *Module) start(info module.StartInfo) (module.Manifest, []*pluginv1.Action, error) {
	fail := func(err error) (module.Manifest, []*pluginv1.Action, error) { return module.Manifest{}, nil, err }
	rpc, err := m.client.Client()
	if err != nil {
		if v := versionRE.FindStringSubmatch(err.Error()); v != nil {
			return fail(fmt.Errorf("the plugin speaks sparkhost plugin protocol %s, this server speaks %d: rebuild the plugin against the github.com/sparkhost/sparkhost/plugin SDK of this server's release",
				v[1], pluginwire.ProtocolVersion()))
		}
		if detail := m.tail.crash(); detail != "" {
			return fail(fmt.Errorf("the plugin process died while starting: %s", detail))
		}
		return fail(fmt.Errorf("no plugin handshake (is it a sparkhost plugin built with plugin.Serve?): %v", err))
	}
	raw, err := rpc.Dispense(pluginwire.PluginName)
	if err != nil {
		return fail(err)
	}
	m.rpc = raw.(pluginv1.ModuleClient)
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.StartTimeout)
	defer cancel()
	resp, err := m.rpc.Init(ctx, &pluginv1.InitRequest{
		Protocol: uint32(pluginwire.ProtocolVersion()), Server: serverToPB(info.Server),
		EntityIdFirst: info.EntityIDs.First, EntityIdLast: info.EntityIDs.Last,
	})
	if err != nil {
		return fail(fmt.Errorf("init: %s: %w", m.describeFailure(err), module.ErrCrashed))
	}
	if resp.GetError() != "" {
		return fail(fmt.Errorf("the module refused to start: %s", resp.GetError()))
	}
	man, err := manifestFromPB(resp.GetManifest())
	if err != nil {
		return fail(err)
	}
	m.nextTick = man.AnswersNextTick
	if m.metrics, err = metricsFromPB(resp.GetManifest()); err != nil {
		return fail(err)
	}
	return man, resp.GetActions(), nil
}

// Unload asks the plugin to shut down, then ends the process and its
// process group and waits for it. A Step still in flight is answered
// before the shutdown (the plugin takes calls in order); its actions and
// the shutdown's are applied.
func (m *Module) Unload() error {
	if m.client == nil {
		return nil
	}
	if m.dead == nil && m.rpc != nil && m.killed.Load() == nil {
		ctx, cancel := context.WithTimeout(m.ctx, shutdownTimeout)
		resp, err := m.rpc.Shutdown(ctx, &pluginv1.ShutdownRequest{})
		cancel()
		if err == nil {
			if a, ok := m.steps.answered(100 * time.Millisecond); ok && a.err == nil {
				m.apply(a.resp.GetActions())
			}
			m.collectCommands()
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
	if m.memory != nil {
		m.memory.stop()
	}
	if m.cmd != nil && m.cmd.Process != nil {
		killGroup(m.cmd.Process.Pid)
	}
	if m.cancel != nil {
		m.cancel() // calls in flight end now
	}
	m.client.Kill() // closes the connection, waits for the process and its log readers
	if m.cmd != nil && m.cmd.Process != nil {
		killGroup(m.cmd.Process.Pid) // grandchildren that were still starting
	}
	m.steps.stop()
	m.logs.close()
}

// crashed turns a failed call into the crash the manager restarts from.
func (m *Module) crashed(err error) error {
	detail := m.describeFailure(err)
	m.kill()
	m.dead = fmt.Errorf("%s: %w", detail, module.ErrCrashed)
	return m.dead
}

// check returns the error that ends the module: it is gone, or the memory
// watchdog killed it (which then becomes the crash).
func (m *Module) check() error {
	if m.dead != nil {
		return m.dead
	}
	if r := m.killed.Load(); r != nil {
		m.kill()
		m.dead = fmt.Errorf("%s: %w", *r, module.ErrCrashed)
		return m.dead
	}
	return nil
}

// describeFailure says why a call failed: a missed deadline, a panic (its
// message from the plugin's stderr), or how the process ended.
func (m *Module) describeFailure(err error) string {
	if r := m.killed.Load(); r != nil {
		return *r
	}
	if status.Code(err) == codes.DeadlineExceeded {
		return m.hungText()
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
