package lua

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func TestManifestFromRegistration(t *testing.T) {
	hs := load(t, "testdata/register.lua", Config{})
	want := module.Manifest{
		Name:    "reg",
		Version: "2.5",
		Messages: []wire.Schema{
			{ID: 1000, Name: "reg_pos", Direction: wire.ClientToServer, Channel: wire.Unreliable,
				MinLen: 12, MaxLen: 12, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
			{ID: 1001, Name: "reg_chat", Direction: wire.BothDirections, Channel: wire.Reliable,
				MinLen: 2, MaxLen: 130, StringFieldOffset: 0, RequiresAdmitted: false},
			{ID: 1002, Name: "reg_state", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered,
				MinLen: 0, MaxLen: 64, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		},
		Commands: []module.CommandSpec{
			{Name: "reg_ping", Usage: "", Help: "answers pong"},
			{Name: "reg_echo", Usage: "WORDS...", Help: "echoes its arguments"},
		},
	}
	if !reflect.DeepEqual(hs.man, want) {
		t.Fatalf("manifest:\n got %+v\nwant %+v", hs.man, want)
	}
	// Every declared schema must be one the transport's registry accepts.
	reg := gamemsg.NewRegistry()
	for _, s := range hs.man.Messages {
		if err := reg.Register(hs.man.Name, s); err != nil {
			t.Errorf("registry refuses %+v: %v", s, err)
		}
	}
	if got := hs.command("reg_echo", "a", "b"); got != "a,b" {
		t.Errorf("reg_echo = %q", got)
	}
	if len(hs.m.CodeHash()) != 64 {
		t.Errorf("CodeHash %q is not hex SHA-256", hs.m.CodeHash())
	}
}

// writeScript writes a script into a temporary directory.
func writeScript(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRegistrationErrors(t *testing.T) {
	const head = `spark.module{name = "bad", version = "1"}` + "\n"
	cases := []struct {
		name, src, want string
	}{
		{"no module", `spark.message{id = 1000, name = "x", direction = "c2s", channel = "reliable", max = 4}`,
			"never called spark.module"},
		{"bad name", `spark.module{name = "Bad Name"}`, "spark.module: field 'name' must be a name"},
		{"twice", head + `spark.module{name = "again"}`, "already declared"},
		{"reserved id", head + `spark.message{id = 999, name = "x", direction = "c2s", channel = "reliable", max = 4}`,
			"spark.message: field 'id' must be an integer in 1000..65535, got 999"},
		{"direction", head + `spark.message{id = 1000, name = "x", direction = "up", channel = "reliable", max = 4}`,
			`field 'direction' must be "c2s", "s2c" or "both", got "up"`},
		{"channel", head + `spark.message{id = 1000, name = "x", direction = "c2s", channel = "fast", max = 4}`,
			`field 'channel' must be "unreliable", "reliable" or "ordered"`},
		{"typo", head + `spark.message{id = 1000, name = "x", direction = "c2s", chanel = "reliable", max = 4}`,
			"unknown field 'chanel'"},
		{"min > max", head + `spark.message{id = 1000, name = "x", direction = "c2s", channel = "reliable", min = 5, max = 4}`,
			"field 'min' (5) is greater than field 'max' (4)"},
		{"offset", head + `spark.message{id = 1000, name = "x", direction = "c2s", channel = "reliable", max = 4, string_offset = 3}`,
			"field 'string_offset' must be an integer in 0..2, got 3"},
		{"duplicate", head + `spark.message{id = 1000, name = "x", direction = "c2s", channel = "reliable", max = 4}
spark.message{id = 1000, name = "y", direction = "c2s", channel = "reliable", max = 4}`, "already declared"},
		{"handler for s2c", head + `local T = spark.message{id = 1000, name = "x", direction = "s2c", channel = "reliable", max = 4}
spark.on_message(T, function() end)`, "which only the server sends"},
		{"command name", head + `spark.command("Bad", "", "", function() end)`, "spark.command: argument #1 (name) must be a name"},
		{"syntax", head + "local x = = 1", "near"},
		{"top-level error", head + "error('boom')", "boom"},
		{"forbidden", head + "dofile('x.lua')", "attempt to call a non-function object"},
		{"endless top level", head + "while true do end", "ran past its time budget of 50ms"},
		{"nested too deep", head + "x = " + strings.Repeat("{", 1200) + strings.Repeat("}", 1200),
			"nested more than 1000 levels"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tryLoad(t, writeScript(t, "bad.lua", c.src), Config{}, newTestHost())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load error = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

func TestRegistrationOnlyWhileLoading(t *testing.T) {
	p := writeScript(t, "late.lua", `spark.module{name = "late"}
spark.on_tick(function()
  spark.message{id = 1000, name = "x", direction = "c2s", channel = "reliable", max = 4}
end)`)
	hs := load(t, p, Config{})
	f := oneFault(t, hs.step(), ErrScript)
	if !strings.Contains(f.Message, "spark.message: only allowed while the module loads") || f.Line != 3 {
		t.Fatalf("fault %v", f)
	}
}

func TestMessageHandlerRepliesWithReader(t *testing.T) {
	hs := load(t, "testdata/echo.lua", Config{})
	if faults := hs.step(message(9, 1000, netString("hello"))); len(faults) != 0 {
		t.Fatalf("faults: %v", faults)
	}
	got := hs.h.takeSends()
	want := append(binary.LittleEndian.AppendUint32(nil, 9), netString("re: hello")...)
	if len(got) != 1 || got[0].Kind != "send" || got[0].Client != 9 || got[0].Type != 1001 || !bytes.Equal(got[0].Payload, want) {
		t.Fatalf("sends = %+v\nwant one send of % x to 9 as 1001", got, want)
	}
}

func TestReaderOverrunIsAFault(t *testing.T) {
	hs := load(t, "testdata/echo.lua", Config{})
	f := oneFault(t, hs.step(message(3, 1002, []byte{1, 2})), ErrScript)
	if !strings.Contains(f.Message, "reader:u32: read past the end of the payload") || f.Line != 21 {
		t.Fatalf("fault = %v", f)
	}
	if s := hs.h.takeSends(); len(s) != 0 {
		t.Fatalf("the handler went on after the overrun: %+v", s)
	}
	// A bad argument names the function and the argument.
	_, err := hs.m.Command("bad_send", nil)
	if err == nil || !strings.Contains(err.Error(), "spark.send: argument #2 (type) must be a registered message id, got 5") {
		t.Fatalf("bad_send: %v", err)
	}
}

func TestHandlersRunInEventOrder(t *testing.T) {
	hs := load(t, "testdata/events.lua", Config{})
	hs.step(
		module.Event{Kind: module.EventAdmitted, Client: 4, Name: "ann"},
		module.Event{Kind: module.EventAdmitted, Client: 5, Name: "bo", Present: true},
		message(4, 1000, []byte{7}),
		module.Event{Kind: module.EventMapChange, Map: "dust", MapIndex: 2},
		module.Event{Kind: module.EventMatchStart, Match: gamemsg.MatchStart{Map: "dust", Round: 3}},
		message(4, 1000, []byte{8}),
		module.Event{Kind: module.EventMatchEnd, MatchEnd: gamemsg.MatchEnd{Reason: gamemsg.MatchEndScore, Winner: 4, WinnerScore: 30}},
		module.Event{Kind: module.EventLeft, Client: 4, Reason: wire.DisconnectTimeout},
	)
	want := strings.Join([]string{
		"admitted 4 ann false",
		"admitted 5 bo true",
		"message 4 1000 7",
		"map_change dust 2",
		"match_start dust 3",
		"message 4 1000 8",
		"match_end Score 4 30",
		"left 4 Timeout",
		"tick 0.05 1",
	}, "\n")
	if got := hs.command("seen"); got != want {
		t.Fatalf("seen:\n%s\nwant:\n%s", got, want)
	}
}

func TestPrintGoesToTheModuleLog(t *testing.T) {
	hs := load(t, "testdata/events.lua", Config{})
	logs := hs.h.logText()
	for _, want := range []string{"INFO loaded 1 nil true\n", "WARN careful 2\n"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

func TestSandbox(t *testing.T) {
	hs := load(t, "testdata/sandbox.lua", Config{})
	absent := []string{
		"dofile", "loadfile", "load", "loadstring", "require", "module", "getfenv", "setfenv",
		"collectgarbage", "newproxy", "_printregs", "io", "os.execute", "os.exit", "os.remove",
		"os.rename", "os.getenv", "os.setenv", "os.tmpname", "debug", "package", "string.dump",
		"channel", "coroutine",
	}
	for _, name := range absent {
		if got := hs.command("probe", name); got != "nil" {
			t.Errorf("%s is a %s, want absent", name, got)
		}
	}
	present := []string{
		"print", "pairs", "ipairs", "pcall", "xpcall", "error", "assert", "select", "type",
		"tostring", "tonumber", "setmetatable", "getmetatable", "rawget", "rawset", "rawequal",
		"next", "unpack", "table.insert", "table.concat", "table.sort", "string.format",
		"string.find", "string.gsub", "math.floor", "math.random", "os.time", "os.clock", "os.date",
		"spark.send", "spark.kv.get", "spark.log.info",
	}
	for _, name := range present {
		if got := hs.command("probe", name); got != "function" {
			t.Errorf("%s is %s, want a function", name, got)
		}
	}
}

func TestBuiltinSemantics(t *testing.T) {
	hs := load(t, "testdata/semantics.lua", Config{})
	if got := hs.command("check"); got != "ok" {
		t.Fatalf("check = %q", got)
	}
}

func TestRandomIsPerModuleAndSeeded(t *testing.T) {
	a := load(t, "testdata/semantics.lua", Config{Seed: 99})
	b := load(t, "testdata/semantics.lua", Config{Seed: 99})
	c := load(t, "testdata/semantics.lua", Config{Seed: 100})
	sa, sb, sc := a.command("seq"), b.command("seq"), c.command("seq")
	if sa != sb {
		t.Errorf("same seed, different sequences: %q %q", sa, sb)
	}
	if sa == sc {
		t.Errorf("different seeds, same sequence %q", sa)
	}
}

// TestHostileScripts: each script is stopped or refused, in bounded wall
// time, with a 20 ms budget; the module reports a fault and stays loaded.
func TestHostileScripts(t *testing.T) {
	cases := []struct {
		file string
		kind error // a second acceptable kind when set in alt
		msg  string
		alt  error
	}{
		{"loop.lua", ErrBudget, "time budget", nil},
		{"pcall_loop.lua", ErrBudget, "time budget", nil},
		{"pattern.lua", ErrBudget, "time budget", nil},
		// Building the 1 MB subject may outlast the budget on a busy machine
		// under -race; then the deadline stops it before the limit does.
		{"pattern_subject.lua", ErrScript, "subject is 1000001 bytes, more than the limit", ErrBudget},
		{"rep.lua", ErrScript, "string.rep: result would be 1000000000 bytes", nil},
		{"concat.lua", ErrScript, "..: result would be 2097152 bytes", nil},
		{"concat_wide.lua", ErrScript, "..: result would be 3200000 bytes", nil},
		// How far the loop gets in 20 ms depends on the machine (and -race):
		// either the build allowance or the deadline stops it.
		{"concat_garbage.lua", ErrHeapCap, "", ErrBudget},
		{"recursion.lua", ErrScript, "stack overflow", nil},
		{"meta_recursion.lua", ErrScript, "stack overflow", nil},
		{"table.lua", ErrBudget, "time budget", nil},
		{"array_gap.lua", ErrBudget, "time budget", nil},
		{"gsub.lua", ErrScript, "string.gsub: result would be", nil},
		{"format.lua", ErrScript, "string.format: result would be", nil},
		{"sort.lua", ErrBudget, "time budget", nil},
		{"unpack.lua", ErrScript, "registry overflow", nil},
		{"table_concat.lua", ErrScript, "table.concat: result would be", nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			hs := load(t, filepath.Join("testdata/hostile", c.file), Config{})
			start := time.Now()
			faults := hs.step()
			took := time.Since(start)
			kind := c.kind
			if c.alt != nil && len(faults) == 1 && errors.Is(faults[0], c.alt) {
				kind = c.alt
			}
			f := oneFault(t, faults, kind)
			if kind == c.kind && !strings.Contains(f.Message, c.msg) {
				t.Errorf("fault message %q lacks %q", f.Message, c.msg)
			}
			if took > time.Second {
				t.Errorf("Step took %v; want < 1s with a 20 ms budget", took)
			}
			if f.File != c.file || f.Module == "" {
				t.Errorf("fault %+v does not name the file and module", f)
			}
			t.Logf("stopped after %v: %v", took, f.Message)
		})
	}
}

func TestModuleWorksAfterOverrun(t *testing.T) {
	hs := load(t, "testdata/overrun.lua", Config{})
	start := time.Now()
	f := oneFault(t, hs.step(), ErrBudget)
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("overrun Step took %v", took)
	}
	if f.Line != 7 || f.Where != "on_tick" || !strings.Contains(f.Traceback, "overrun.lua:7") {
		t.Errorf("fault %+v: want on_tick at overrun.lua:7 with a traceback", f)
	}
	for range 3 {
		if faults := hs.step(); len(faults) != 0 {
			t.Fatalf("faults after the overrun: %v", faults)
		}
	}
	if got := hs.command("ticks"); got != "2,3,4" {
		t.Fatalf("ticks after the overrun = %q, want 2,3,4", got)
	}
}

func TestRuntimeErrorIsAFaultWithLocation(t *testing.T) {
	hs := load(t, "testdata/runtime_error.lua", Config{})
	f := oneFault(t, hs.step(), ErrScript)
	if f.Module != "boom" || f.File != "runtime_error.lua" || f.Line != 5 || f.Where != "on_tick" {
		t.Errorf("fault %+v", f)
	}
	if !strings.Contains(f.Traceback, "runtime_error.lua:5") || !strings.Contains(f.Traceback, "runtime_error.lua:11") {
		t.Errorf("traceback lacks the frames:\n%s", f.Traceback)
	}
	if !strings.Contains(f.Error(), "module boom: runtime_error.lua:5: ") {
		t.Errorf("Error() = %q", f.Error())
	}
	if faults := hs.step(); len(faults) != 0 {
		t.Fatalf("tick 2: %v", faults)
	}
	if got := hs.command("ticks"); got != "2" {
		t.Fatalf("ticks = %q: the module stopped after the fault", got)
	}
}

func TestTimers(t *testing.T) {
	hs := load(t, "testdata/timers.lua", Config{})
	hs.dt = 100 * time.Millisecond
	for range 6 {
		if faults := hs.step(); len(faults) != 0 {
			t.Fatal(faults)
		}
	}
	// every(0.1) fires at 0.1, 0.2, 0.3 then cancels itself; after(0.25)
	// fires at the first Step at or past 0.25 (0.3), before every3 (which
	// was due later).
	if got, want := hs.command("fired"), "every1 every2 after@0.3 every3"; got != want {
		t.Fatalf("fired = %q, want %q", got, want)
	}
	hs.command("later")
	hs.step()
	if got := hs.command("fired"); !strings.HasSuffix(got, " zero") {
		t.Fatalf("after(0) did not fire on the next Step: %q", got)
	}
}

func TestCommandsHaveTheirOwnDeadline(t *testing.T) {
	hs := load(t, "testdata/overrun.lua", Config{CommandBudget: 30 * time.Millisecond})
	if got := hs.command("greet", "ann", "bob"); got != "hello ann,bob" {
		t.Fatalf("greet = %q", got)
	}
	start := time.Now()
	_, err := hs.m.Command("spin", nil)
	took := time.Since(start)
	if !errors.Is(err, ErrBudget) || took > 500*time.Millisecond {
		t.Fatalf("spin: %v after %v; want ErrBudget within the 30 ms budget", err, took)
	}
	if f := hs.h.takeFaults(); len(f) != 1 {
		t.Errorf("a command's overrun is a fault: %v", f)
	}
	_, err = hs.m.Command("fail", nil)
	if !errors.Is(err, ErrScript) || !strings.Contains(err.Error(), "no such player") {
		t.Fatalf("fail: %v", err)
	}
	if f := hs.h.takeFaults(); len(f) != 0 {
		t.Errorf("a command's script error is not a fault: %v", f)
	}
	if _, err := hs.m.Command("table", nil); err == nil {
		t.Error("a command returning a table must fail")
	}
	if _, err := hs.m.Command("nope", nil); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("unknown command: %v", err)
	}
	if got := hs.command("greet", "again"); got != "hello again" {
		t.Fatalf("after the overrun greet = %q", got)
	}
}

func TestKV(t *testing.T) {
	hs := load(t, "testdata/kv.lua", Config{})
	hs.command("set", "b", "2")
	hs.command("set", "a", "1")
	if got := hs.command("get", "a"); got != "1" {
		t.Errorf("get a = %q", got)
	}
	if got := hs.command("keys"); got != "a,b" {
		t.Errorf("keys = %q", got)
	}
	hs.command("del", "a")
	if got := hs.command("get", "a"); got != "<nil>" {
		t.Errorf("get after delete = %q", got)
	}
	if got := hs.command("num"); got != "42" {
		t.Errorf("number value = %q", got)
	}
	hs.h.kv.setErr = errors.New("disk full")
	if _, err := hs.m.Command("set", []string{"c", "3"}); err == nil || !strings.Contains(err.Error(), "spark.kv.set: disk full") {
		t.Errorf("failing set: %v", err)
	}
}

func TestWriterBuildsExactBytes(t *testing.T) {
	hs := load(t, "testdata/writer.lua", Config{})
	if got := hs.command("send"); got != "35" {
		t.Fatalf("len after reuse = %q", got)
	}
	var want []byte
	want = append(want, 0xAB)
	want = binary.LittleEndian.AppendUint16(want, 0x1234)
	want = binary.LittleEndian.AppendUint32(want, 0xDEADBEEF)
	want = binary.LittleEndian.AppendUint32(want, 0xFFFFFFFE)
	want = binary.LittleEndian.AppendUint32(want, math.Float32bits(1.5))
	want = append(want, 1)
	want = append(want, netString("hi")...)
	for _, f := range []float32{1, -2, 0.25} {
		want = binary.LittleEndian.AppendUint32(want, math.Float32bits(f))
	}
	want = append(want, 0, 255)
	sends := hs.h.takeSends()
	if len(sends) != 2 {
		t.Fatalf("sends = %+v", sends)
	}
	if s := sends[0]; s.Kind != "broadcast" || s.Type != 1500 || !bytes.Equal(s.Payload, want) {
		t.Errorf("broadcast = %+v\nwant % x", s, want)
	}
	if s := sends[1]; s.Kind != "except" || s.Client != 7 || !bytes.Equal(s.Payload, want) {
		t.Errorf("broadcast except = %+v", s)
	}
	for cmd, msg := range map[string]string{
		"overflow": "writer:u8: argument #1 (value) must be an integer in 0..255, got 256",
		"toolong":  "spark.send: argument #3 (payload) is 201 bytes; message 1500 (\"w_out\") takes 0..200 bytes",
	} {
		if _, err := hs.m.Command(cmd, nil); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v\nwant %q", cmd, err, msg)
		}
	}
	if got := hs.command("roundtrip"); got != "2 2 1" {
		t.Errorf("roundtrip = %q", got)
	}
}

func TestSaveStateRestoreState(t *testing.T) {
	old := load(t, "testdata/state.lua", Config{})
	state, err := old.m.SaveState()
	if err != nil {
		t.Fatal(err)
	}
	successor := load(t, "testdata/state.lua", Config{})
	if got := successor.command("show"); got != "nothing" {
		t.Fatalf("before restore: %q", got)
	}
	if err := successor.m.RestoreState(state); err != nil {
		t.Fatal(err)
	}
	want := "round=3 it=7 names=ann,bob flag=yes ok=false ratio=0.5 deep=x"
	if got := successor.command("show"); got != want {
		t.Fatalf("show = %q, want %q", got, want)
	}
	if err := successor.m.RestoreState(state[:len(state)-3]); !errors.Is(err, ErrState) {
		t.Errorf("truncated state: %v", err)
	}
	// A script without save_state carries nothing.
	plain := load(t, "testdata/kv.lua", Config{})
	if s, err := plain.m.SaveState(); s != nil || err != nil {
		t.Errorf("SaveState without save_state = %v, %v", s, err)
	}
	cyc := load(t, "testdata/cycle.lua", Config{})
	if _, err := cyc.m.SaveState(); !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
}

func TestHeapCap(t *testing.T) {
	hs := load(t, "testdata/heap.lua", Config{HeapCap: 1 << 20})
	hs.budget = time.Second // the growth loop must finish its tick, even under -race
	for i := range 40 {
		faults := hs.step()
		if len(faults) == 0 {
			continue
		}
		f := oneFault(t, faults, ErrHeapCap)
		if !strings.Contains(f.Message, "over its cap of 1048576") {
			t.Errorf("fault %v", f)
		}
		t.Logf("heap cap fault after %d ticks (%d entries): %s", i+1, (i+1)*20000, f.Message)
		return
	}
	t.Fatalf("no heap fault after 40 ticks (%d entries); estimate %d", 40*20000, hs.m.HeapEstimate())
}

func BenchmarkStep(b *testing.B) {
	hs := load(b, "../../scripts/hello.lua", Config{})
	ev := []module.Event{message(4, 1000, netString("ann"))}
	tick := module.Tick{DT: 50 * time.Millisecond}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tick.Number = uint64(i + 1)
		tick.Deadline = time.Now().Add(time.Second)
		if err := hs.m.Step(tick, ev); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 0 {
			hs.h.takeSends()
		}
	}
}

func TestHeapEstimateOfAQuietModule(t *testing.T) {
	hs := load(t, "testdata/register.lua", Config{})
	if est := hs.m.HeapEstimate(); est < 1000 || est > 256<<10 {
		t.Fatalf("estimate of a fresh module = %d bytes", est)
	}
}

func TestUnloadFromInsideAFault(t *testing.T) {
	h := newTestHost()
	hs, err := tryLoad(t, "testdata/runtime_error.lua", Config{}, h)
	if err != nil {
		t.Fatal(err)
	}
	h.onFault = func(error) { _ = hs.m.Unload() }
	if faults := hs.step(); len(faults) != 1 {
		t.Fatalf("faults %v", faults)
	}
	if hs.m.L != nil {
		t.Fatal("the state was not closed when the Step returned")
	}
	if err := hs.m.Step(module.Tick{Number: 2}, nil); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("Step after Unload: %v", err)
	}
}

func TestTableLayoutIsKnown(t *testing.T) {
	// The heap estimate reads LTable's unexported lengths; a gopher-lua
	// version that renames them falls back to a coarser estimate. Notice.
	if !tableLayout.ok {
		t.Fatal("LTable's fields array, dict, strdict, keys, k2i not found: update heap.go")
	}
}

func TestUnload(t *testing.T) {
	hs := load(t, "testdata/events.lua", Config{})
	if err := hs.m.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := hs.m.Step(module.Tick{Number: 1}, nil); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("Step after Unload: %v", err)
	}
	if _, err := hs.m.Command("seen", nil); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("Command after Unload: %v", err)
	}
	if err := hs.m.Unload(); err != nil {
		t.Fatalf("second Unload: %v", err)
	}
}
