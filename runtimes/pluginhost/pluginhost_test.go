package pluginhost_test

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/runtimes/pluginhost"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testplugin.Cleanup()
	os.Exit(code)
}

// noEntities is the entity API of a host without replication.
type noEntities struct{}

func (noEntities) EntityIDs() module.IDRange                       { return module.IDRange{First: 1} }
func (noEntities) SpawnEntity(module.Spawn) (uint32, error)        { return 0, module.ErrNoWorld }
func (noEntities) DestroyEntity(uint32) error                      { return module.ErrNoWorld }
func (noEntities) SetEntityPosition(uint32, wire.Vec3, bool) error { return module.ErrNoWorld }
func (noEntities) SetEntityFields(uint32, ...gamemsg.FieldValue) error {
	return module.ErrNoWorld
}
func (noEntities) SetEntityOwner(uint32, uint32) error           { return module.ErrNoWorld }
func (noEntities) SetEntityParty(uint32, uint32) error           { return module.ErrNoWorld }
func (noEntities) SetClientView(uint32, module.ClientView) error { return module.ErrNoWorld }
func (noEntities) Raycast(uint32, wire.Vec3, wire.Vec3, float32) (module.Hit, error) {
	return module.Hit{}, module.ErrNoWorld
}

// stubHost is the server side a plugin's actions land on: it records them.
type stubHost struct {
	noEntities
	reg     *wire.Registry
	owner   string
	sends   []string
	faults  []error
	clients map[uint32]module.ClientInfo
	looked  []uint32 // the clients whose facts Client and Clients handed out
	onScore func()   // called by AddScore (a test's panic)
}

func newStubHost() *stubHost {
	return &stubHost{reg: gamemsg.NewRegistry(), clients: map[uint32]module.ClientInfo{}}
}

func (h *stubHost) Send(c uint32, t wire.MessageType, p []byte) error {
	h.sends = append(h.sends, fmt.Sprintf("%d:%d:%q", c, t, p))
	return nil
}
func (h *stubHost) Broadcast(t wire.MessageType, p []byte) error { return h.BroadcastExcept(0, t, p) }
func (h *stubHost) BroadcastExcept(x uint32, t wire.MessageType, p []byte) error {
	h.sends = append(h.sends, fmt.Sprintf("all-%d:%d:%q", x, t, p))
	return nil
}
func (h *stubHost) Kick(uint32, string) error { return nil }
func (h *stubHost) Log() *slog.Logger         { return slog.New(slog.DiscardHandler) }
func (h *stubHost) Fault(err error)           { h.faults = append(h.faults, err) }
func (h *stubHost) Client(id uint32) (module.ClientInfo, bool) {
	c, ok := h.clients[id]
	if ok {
		h.looked = append(h.looked, id)
	}
	return c, ok
}
func (h *stubHost) Clients() []module.ClientInfo {
	var out []module.ClientInfo
	for _, id := range h.ClientIDs() {
		out = append(out, h.clients[id])
		h.looked = append(h.looked, id)
	}
	return out
}
func (h *stubHost) ClientIDs() []uint32 {
	ids := slices.Collect(maps.Keys(h.clients))
	slices.Sort(ids)
	return ids
}
func (h *stubHost) Server() module.ServerInfo { return module.ServerInfo{Name: "stub", TickRate: 60} }
func (h *stubHost) SetArea(string) error      { return nil }

func (h *stubHost) AddScore(uint32, int32, int32, int32) {
	if h.onScore != nil {
		h.onScore()
	}
}
func (h *stubHost) KV() (module.KV, error)                     { return nil, errors.New("stub: no kv") }
func (h *stubHost) SetMetric(string, float64) error            { return nil }
func (h *stubHost) AddMetric(string, float64) error            { return nil }
func (h *stubHost) Now() time.Time                             { return time.Time{} }
func (h *stubHost) After(time.Duration, func()) module.TimerID { return 0 }
func (h *stubHost) Every(time.Duration, func()) module.TimerID { return 0 }
func (h *stubHost) Cancel(module.TimerID) bool                 { return false }
func (h *stubHost) admit(id uint32, name string) module.Event {
	h.clients[id] = module.ClientInfo{ID: id, Name: name}
	return module.Event{Kind: module.EventAdmitted, Client: id, Name: name}
}

func str(s string) []byte {
	w := wire.NewWriter(nil)
	w.Str(s)
	return w.Bytes()
}

func start(t *testing.T, pkg string, mut func(*pluginhost.Config)) (*pluginhost.Module, *stubHost, module.Manifest) {
	t.Helper()
	cfg := pluginhost.Config{Path: testplugin.Build(t, pkg), Log: slog.New(slog.DiscardHandler)}
	if mut != nil {
		mut(&cfg)
	}
	m, err := pluginhost.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := newStubHost()
	man, err := m.Load(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Unload() })
	return m, h, man
}

// tick is tick n of a 60 Hz server whose module budget is generous (10 s of
// wall clock from now): the adapter waits for the answer, so a test reads
// the actions right after Step.
func tick(n uint64) module.Tick {
	return module.Tick{Number: n, DT: time.Second / 60, Now: time.Unix(1000, 0).Add(time.Duration(n) * time.Second / 60),
		Deadline: time.Now().Add(10 * time.Second)}
}

// fastTick is tick n with the default budget's 4 ms wait: the adapter
// moves on without a late answer, as in a server.
func fastTick(n uint64) module.Tick {
	t := tick(n)
	t.Deadline = time.Now().Add(4 * time.Millisecond)
	return t
}

// stepUntilCrash runs fast ticks from n until Step reports a crash (20 s at
// most, in real time).
func stepUntilCrash(t *testing.T, m *pluginhost.Module, n uint64) error {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); n++ {
		if err := m.Step(fastTick(n), nil); err != nil {
			return err
		}
		time.Sleep(time.Second / 60)
	}
	t.Fatal("no crash within 20 s")
	return nil
}

func TestGreeterManifestEventsActionsCommand(t *testing.T) {
	m, h, man := start(t, "./examples/greeter", nil)
	if man.Name != "greeter" || man.Version != "1.0.0" || len(man.Messages) != 2 || man.Messages[0].ID != 1000 ||
		len(man.Commands) != 1 || man.Commands[0].Name != "greeter_stats" {
		t.Fatalf("manifest %+v", man)
	}
	if len(m.CodeHash()) != 64 || m.Pid() == 0 {
		t.Fatalf("hash %q pid %d", m.CodeHash(), m.Pid())
	}
	evs := []module.Event{h.admit(7, "alice"), {Kind: module.EventMessage, Client: 7, Type: 1000, Payload: str("hi")}}
	if err := m.Step(tick(1), evs); err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("7:1001:%q", str("welcome alice, 1 here")), fmt.Sprintf("all-0:1001:%q", str("alice: hi"))}
	if strings.Join(h.sends, "|") != strings.Join(want, "|") {
		t.Fatalf("sends %q, want %q", h.sends, want)
	}
	out, err := m.Command("greeter_stats", nil)
	if err != nil || out != "shouts 1, players 1" {
		t.Fatalf("command: %q %v", out, err)
	}
	if _, err := m.Command("nope", nil); err == nil || errors.Is(err, module.ErrCrashed) {
		t.Fatalf("unknown command: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	d, err := pluginhost.Describe(testplugin.Build(t, "./examples/greeter"), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if d.Protocol != 1 || d.Name != "greeter" || len(d.Messages) != 2 || d.Commands[0].Name != "greeter_stats" {
		t.Fatalf("%+v", d)
	}
	if _, err := pluginhost.Describe("/bin/true", nil, 10*time.Second); err == nil || !strings.Contains(err.Error(), "did not describe itself") {
		t.Fatalf("non-plugin: %v", err)
	}
}

// TestVersionMismatch: a plugin built against protocol 2 is refused with
// the documented one-line error, and its process is gone.
func TestVersionMismatch(t *testing.T) {
	path := testplugin.Build(t, "./examples/greeter", "-X github.com/sparkhost/sparkhost/internal/pluginwire.protocolVersion=2")
	m, _ := pluginhost.New(pluginhost.Config{Path: path, Source: "./greeter", Log: slog.New(slog.DiscardHandler)})
	_, err := m.Load(newStubHost())
	want := "the plugin speaks sparkhost plugin protocol 2, this server speaks 1: rebuild the plugin against the github.com/sparkhost/sparkhost/plugin SDK of this server's release"
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	assertNoZombies(t)
}

func TestChecksum(t *testing.T) {
	path := testplugin.Build(t, "./examples/greeter")
	sum, err := pluginhost.FileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	start(t, "./examples/greeter", func(c *pluginhost.Config) { c.SHA256 = strings.ToUpper(sum) })
	bad := strings.Repeat("0", 64)
	m, _ := pluginhost.New(pluginhost.Config{Path: path, Source: "./greeter", SHA256: bad})
	_, err = m.Load(newStubHost())
	want := fmt.Sprintf("checksum mismatch: config expects sha256 %s, the file has %s; deploy the intended build or update [modules.sha256]", bad, sum)
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

func TestNotAPlugin(t *testing.T) {
	m, _ := pluginhost.New(pluginhost.Config{Path: "/bin/true", StartTimeout: 5 * time.Second, Log: slog.New(slog.DiscardHandler)})
	_, err := m.Load(newStubHost())
	if err == nil || !strings.Contains(err.Error(), "no plugin handshake (is it a sparkhost plugin built with plugin.Serve?)") {
		t.Fatalf("%v", err)
	}
}

// TestCrashes: each misbehaviour ends in module.ErrCrashed with a reason
// that says what happened, and leaves no process behind.
func TestCrashes(t *testing.T) {
	for _, tc := range []struct{ ctl, want string }{
		{"panic", `plugin process exited: exit status 2 (panic: boom on request from alice)`},
		{"exit", `plugin process exited: exit status 3`},
		{"sleep", `did not answer for 2s and was killed as hung`},
	} {
		t.Run(tc.ctl, func(t *testing.T) {
			m, h, _ := start(t, "./host/testdata/plugins/faulty", func(c *pluginhost.Config) { c.HangTimeout = 2 * time.Second })
			pid := m.Pid()
			if err := m.Step(tick(1), []module.Event{h.admit(1, "alice")}); err != nil {
				t.Fatal(err)
			}
			err := m.Step(fastTick(2), []module.Event{{Kind: module.EventMessage, Client: 1, Type: 1100, Payload: str(tc.ctl)}})
			if err == nil {
				err = stepUntilCrash(t, m, 3)
			}
			if !errors.Is(err, module.ErrCrashed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrCrashed with %q", err, tc.want)
			}
			if err2 := m.Step(tick(3), nil); !errors.Is(err2, module.ErrCrashed) {
				t.Fatalf("step after crash: %v", err2)
			}
			m.Unload()
			if syscall.Kill(pid, 0) == nil {
				t.Fatalf("plugin pid %d still exists", pid)
			}
			assertNoZombies(t)
		})
	}
}

// TestKill9DuringBusyTick: kill -9 of the plugin (which has a grandchild)
// while a tick with a large batch is in flight: the step reports the crash,
// the grandchild is killed with the process group, no zombie is left and
// no go-plugin or gRPC goroutine outlives Unload.
func TestKill9DuringBusyTick(t *testing.T) {
	before := pluginGoroutines()
	m, h, _ := start(t, "./host/testdata/plugins/faulty", nil)
	if err := m.Step(tick(1), []module.Event{h.admit(1, "alice"), {Kind: module.EventMessage, Client: 1, Type: 1100, Payload: str("spawn")}}); err != nil {
		t.Fatal(err)
	}
	pids, err := m.Command("faulty_pid", nil)
	f := strings.Fields(pids)
	if err != nil || len(f) != 2 {
		t.Fatalf("faulty_pid: %q %v", pids, err)
	}
	pid, _ := strconv.Atoi(f[0])
	grandchild, _ := strconv.Atoi(f[1])
	busy := make([]module.Event, 20000)
	for i := range busy {
		busy[i] = module.Event{Kind: module.EventMessage, Client: 1, Type: 1100, Payload: str(fmt.Sprintf("echo %d", i))}
	}
	var crashed error
	for n := uint64(2); n < 200 && crashed == nil; n++ {
		if n == 5 {
			go func() { time.Sleep(2 * time.Millisecond); syscall.Kill(pid, syscall.SIGKILL) }()
		}
		crashed = m.Step(tick(n), busy)
	}
	if !errors.Is(crashed, module.ErrCrashed) || !strings.Contains(crashed.Error(), "signal: killed") {
		t.Fatalf("after kill -9: %v", crashed)
	}
	m.Unload()
	for deadline := time.Now().Add(10 * time.Second); alive(grandchild) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(grandchild) {
		t.Fatalf("grandchild %d survived its plugin", grandchild)
	}
	assertNoZombies(t)
	var after []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if after = pluginGoroutines(); len(after) <= len(before) {
			return
		}
	}
	t.Fatalf("goroutines leaked:\n%s", strings.Join(after, "\n\n"))
}

// alive reports whether pid runs (a zombie or a missing process does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

var statRE = regexp.MustCompile(`\) (\S) (\d+) `)

// assertNoZombies fails if this process has a child in state Z.
func assertNoZombies(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	var zombies []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		zombies = zombies[:0]
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, p := range stats {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			m := statRE.FindStringSubmatch(string(b))
			if m != nil && m[1] == "Z" && m[2] == strconv.Itoa(os.Getpid()) {
				zombies = append(zombies, p)
			}
		}
		if len(zombies) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(zombies) > 0 {
		t.Fatalf("zombie children: %v", zombies)
	}
}

// pluginGoroutines returns the stacks of goroutines in go-plugin or gRPC code.
func pluginGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "hashicorp/go-plugin") || strings.Contains(g, "google.golang.org/grpc") {
			out = append(out, g)
		}
	}
	return out
}
