// Package typescript_test compiles the TypeScript client runtime and the code
// tsgen generates with tsc, and runs them with node: against the protocol's
// test vectors, on their own (codecs), and against a live sparkhost server
// running scripts/hello.lua. The hello codecs are generated from the real
// schema export of scripts/hello.lua (what `sparkhost schema export
// --module` writes), not from a fixture.
package typescript_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/clients/typescript/tsgen"
	"github.com/sparkhost/sparkhost/host"
	"github.com/sparkhost/sparkhost/host/config"
	"github.com/sparkhost/sparkhost/host/hosttest"
	"github.com/sparkhost/sparkhost/module/schemajson"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/runtimes"
)

// The server runs Lua modules: link the module runtimes as sparkhost does.
func init() { runtimes.Register() }

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  string
	buildSkip string
)

// exportModules returns what `sparkhost schema export --module` writes for
// the module files: the modules are loaded as sparkhost check loads them
// (host.CheckModuleSchemas, the function the command calls) and their
// schemas written with schemajson.Write.
func exportModules(files ...string) ([]byte, error) {
	cfg, err := config.Parse(config.DefaultTOML, "config.toml (built-in)")
	if err != nil {
		return nil, err
	}
	cfg.Modules.Load = nil
	tmp, err := os.MkdirTemp("", "tsexport")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	cfg.Apply(config.Overrides{DataDir: &tmp}, func(string) string { return "" })
	checks, schemas := host.CheckModuleSchemas(cfg, host.Options{}, files)
	for _, c := range checks {
		if c.Err != nil {
			return nil, c.Err
		}
	}
	var b bytes.Buffer
	err = schemajson.Write(&b, schemas)
	return b.Bytes(), err
}

// everyKindExport exports test/everykind.lua, a typed module declaring every
// field kind and every kind as an array element.
func everyKindExport() ([]byte, error) { return exportModules("test/everykind.lua") }

// compiled copies the runtime, tests and example into a temporary directory,
// generates generated/hello.ts from the export of scripts/hello.lua,
// generated/everykind.ts from the export of test/everykind.lua and
// generated/alltypes.ts from its fixture, compiles everything with tsc and
// returns the directory. It skips the test
// when tsc or node is not installed (.ci/run installs Debian's node-typescript).
func compiled(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		for _, tool := range []string{"tsc", "node"} {
			if _, err := exec.LookPath(tool); err != nil {
				buildSkip = tool + " not found: install Node.js and TypeScript (Debian: apt-get install nodejs node-typescript) to test the TypeScript client"
				return
			}
		}
		dir, err := os.MkdirTemp("", "tsclient")
		if err != nil {
			buildErr = err.Error()
			return
		}
		buildDir = dir
		for _, sub := range []string{"src", "test", "examples"} {
			if err := copyDir(sub, filepath.Join(dir, sub)); err != nil {
				buildErr = err.Error()
				return
			}
		}
		if err := copyFile("tsconfig.json", filepath.Join(dir, "tsconfig.json")); err != nil {
			buildErr = err.Error()
			return
		}
		os.MkdirAll(filepath.Join(dir, "generated"), 0o755)
		for _, name := range []string{"hello", "everykind", "alltypes"} {
			var in []byte
			var err error
			switch name {
			case "hello":
				in, err = exportModules("../../scripts/hello.lua")
			case "everykind":
				in, err = everyKindExport()
			default:
				in, err = os.ReadFile(filepath.Join("tsgen", "testdata", name+".json"))
			}
			if err != nil {
				buildErr = "schemas of " + name + ": " + err.Error()
				return
			}
			code, err := tsgen.GenerateWith(in, tsgen.Options{RuntimeImport: "../src/index"})
			if err != nil {
				buildErr = "generate " + name + ": " + err.Error()
				return
			}
			if err := os.WriteFile(filepath.Join(dir, "generated", name+".ts"), code, 0o644); err != nil {
				buildErr = err.Error()
				return
			}
		}
		out, err := exec.Command("tsc", "-p", dir).CombinedOutput()
		if err != nil {
			buildErr = "tsc: " + err.Error() + "\n" + string(out)
		}
	})
	if buildSkip != "" {
		t.Skip(buildSkip)
	}
	if buildErr != "" {
		t.Fatal(buildErr)
	}
	return buildDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if npmDir != "" {
		os.RemoveAll(npmDir)
	}
	os.Exit(code)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

func copyDir(from, to string) error {
	return filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if !strings.HasSuffix(path, ".ts") {
			return nil
		}
		return copyFile(path, filepath.Join(to, rel))
	})
}

// runNode runs a compiled script and returns its output; it fails the test
// on a non-zero exit.
func runNode(t *testing.T, dir, script string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(dir, "build", script)}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s %v: %v\n%s", script, args, err, out.String())
	}
	return out.String()
}

func TestRuntimeMatchesProtocolVectors(t *testing.T) {
	dir := compiled(t)
	vectors, _ := filepath.Abs("../../netstack/testdata")
	if out := runNode(t, dir, "test/vectors.js", vectors); !strings.Contains(out, "vectors ok") {
		t.Fatalf("vectors:\n%s", out)
	}
}

// TestTSRooms: the room payloads and the password vector of §13.7 over
// node:crypto.
func TestTSRooms(t *testing.T) {
	dir := compiled(t)
	if out := runNode(t, dir, "test/rooms.js"); !strings.Contains(out, "rooms ok (crypto: node:crypto)") {
		t.Fatalf("rooms:\n%s", out)
	}
}

func TestTSHoldQueue(t *testing.T) {
	dir := compiled(t)
	if out := runNode(t, dir, "test/hold.js"); !strings.Contains(out, "hold ok") {
		t.Fatalf("hold:\n%s", out)
	}
}

func TestGeneratedCodecs(t *testing.T) {
	dir := compiled(t)
	if out := runNode(t, dir, "test/codec.js"); !strings.Contains(out, "codecs ok") {
		t.Fatalf("codecs:\n%s", out)
	}
}

// TestTSHelloFixtureIsTheExport: tsgen/testdata/hello.json (used by the
// generator's unit tests and the gen-ts command test) is byte for byte what
// the export of scripts/hello.lua writes, so it cannot drift from the module.
func TestTSHelloFixtureIsTheExport(t *testing.T) {
	got, err := exportModules("../../scripts/hello.lua")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("tsgen/testdata/hello.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("tsgen/testdata/hello.json is not the export of scripts/hello.lua; the export:\n%s", got)
	}
}

// TestGenTSAcceptsEveryKindExport: the export of a Lua module declaring
// every kind (and every kind as an array element) generates code whose
// schema carries each field as the export has it.
func TestGenTSAcceptsEveryKindExport(t *testing.T) {
	in, err := everyKindExport()
	if err != nil {
		t.Fatal(err)
	}
	code, err := tsgen.Generate(in)
	if err != nil {
		t.Fatalf("tsgen refuses the export:\n%s\n%v", in, err)
	}
	for _, want := range []string{
		`{ name: "flags", kind: Kind.U8 }`, `{ name: "speed", kind: Kind.F32 }`, `{ name: "pos", kind: Kind.Vec3 }`,
		`{ name: "name", kind: Kind.Str, max: 16 }`, `{ name: "blob", kind: Kind.Bytes, max: 8 }`,
		`{ name: "a_u8", kind: Kind.Array, elem: Kind.U8, maxCount: 4 }`,
		`{ name: "a_str", kind: Kind.Array, elem: Kind.Str, elemMax: 5, maxCount: 3 }`,
		`{ name: "a_bytes", kind: Kind.Array, elem: Kind.Bytes, elemMax: 4, maxCount: 3 }`,
		"  stringOffset: 27,", "export type Opaque = Uint8Array;",
	} {
		if !strings.Contains(string(code), want) {
			t.Errorf("generated code lacks %s", want)
		}
	}
}

// TestTSCodecAgreesWithServer: payloads the Go reference encodes
// (wire.AppendFields) for every_kind, and mutations of them, are accepted
// or refused by the generated decoder and the runtime's layout check
// exactly as wire.CheckFields (what the server runs) judges them; an
// accepted payload re-encodes to the same bytes.
func TestTSCodecAgreesWithServer(t *testing.T) {
	dir := compiled(t)
	in, err := everyKindExport()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := schemajson.DecodeBytes(in)
	if err != nil || len(schemas) != 2 {
		t.Fatalf("export: %v %d", err, len(schemas))
	}
	fields := schemas[0].Fields
	vals := [][]any{
		{uint8(7), uint16(65535), uint32(4000000000), int32(-5), float32(1.5), wire.Vec3{X: 1, Y: -2, Z: 0.25}, "zoë", []byte{1, 2, 3},
			[]any{uint8(1), uint8(255)}, []any{uint16(9)}, []any{uint32(1), uint32(2), uint32(3), uint32(4)}, []any{int32(-1)},
			[]any{float32(0.5)}, []any{wire.Vec3{X: 3}, wire.Vec3{Z: -3}}, []any{"a", "bé", ""}, []any{[]byte{}, []byte{9, 9, 9, 9}}},
		{uint8(0), uint16(0), uint32(0), int32(0), float32(0), wire.Vec3{}, "", []byte{},
			[]any{}, []any{}, []any{}, []any{}, []any{}, []any{}, []any{}, []any{}},
	}
	var cases [][]byte
	for _, v := range vals {
		p, err := wire.AppendFields(nil, fields, v)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, p)
		// Mutations: every truncation, a trailing byte, and every byte set to 0xff and to 0x00.
		for n := 0; n < len(p); n++ {
			cases = append(cases, p[:n])
		}
		cases = append(cases, append(append([]byte{}, p...), 0))
		for i := range p {
			for _, b := range []byte{0xff, 0x00, 0x7f} {
				m := append([]byte{}, p...)
				m[i] = b
				cases = append(cases, m)
			}
		}
	}
	var lines []string
	want := map[string]bool{}
	for _, c := range cases {
		h := hex.EncodeToString(c)
		lines = append(lines, h)
		s := schemas[0].Schema
		want[h] = len(c) >= int(s.MinLen) && len(c) <= int(s.MaxLen) && wire.CheckFields(fields, c) == nil
	}
	file := filepath.Join(dir, "everykind-cases.txt")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runNode(t, dir, "test/everykind.js", file)
	accepted := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("node output: %q", line)
		}
		h, verdict := f[1], f[2]
		if h == "-" {
			h = ""
		}
		switch verdict {
		case "mismatch":
			t.Errorf("payload %s: the generated decoder and the runtime's receive check disagree", h)
			continue
		case "reencoded":
			t.Errorf("payload %s: decoded, but encodes back to other bytes", h)
			continue
		}
		if (verdict == "ok") != want[h] {
			t.Errorf("payload %s: TypeScript says %s, the server's check says ok=%v", h, verdict, want[h])
		}
		if verdict == "ok" {
			accepted++
		}
	}
	if accepted < 2 {
		t.Errorf("only %d payloads accepted:\n%s", accepted, out)
	}
	t.Logf("%d payloads judged alike, %d accepted", len(cases), accepted)
}

// startHello runs a real server on 127.0.0.1 with scripts/hello.lua and a
// fresh identity key.
func startHello(t *testing.T) *host.Server {
	t.Helper()
	tmp, err := os.MkdirTemp("", "tsh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	cfg := config.Default()
	port, dataDir := 0, filepath.Join(tmp, "data")
	cfg.Apply(config.Overrides{Port: &port, DataDir: &dataDir}, func(string) string { return "" })
	cfg.Modules.Load = []string{"../../scripts/hello.lua"}
	srv, err := host.New(host.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hosttest.Run(t, srv)
	return srv
}

// helloClient runs the compiled example client against srv.
func helloClient(t *testing.T, dir string, srv *host.Server, name string, extra ...string) string {
	t.Helper()
	args := append([]string{"127.0.0.1", strconv.Itoa(int(srv.Addr().Port())), srv.Pin(), name}, extra...)
	return runNode(t, dir, "examples/hello.js", args...)
}

func waitPlayers(t *testing.T, srv *host.Server, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for srv.Stats().Players != n {
		if time.Now().After(deadline) {
			t.Fatalf("players %d, want %d", srv.Stats().Players, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTypeScriptClientGreetsLiveServer: the generated hello_greet encoder and
// hello_reply decoder, over the TypeScript runtime's v4 session, against the
// real server and Lua module; the client's Disconnect is honoured.
func TestTypeScriptClientGreetsLiveServer(t *testing.T) {
	dir := compiled(t)
	srv := startHello(t)
	out := helloClient(t, dir, srv, "ann")
	if !strings.Contains(out, "reply: Hello, ann! You are greeting number 1.\n") {
		t.Fatalf("no decoded hello_reply:\n%s", out)
	}
	if !strings.Contains(out, "closed ClientQuit") || !strings.Contains(out, "dropped 0, refused 0") {
		t.Errorf("the client dropped or refused something, or did not close cleanly:\n%s", out)
	}
	if got, err := srv.Exec("hello_count"); err != nil || got != "greetings answered: 1" {
		t.Errorf("hello_count: %q %v", got, err)
	}
	waitPlayers(t, srv, 0) // the Disconnect(ClientQuit) arrived: no 10 s timeout
	st := srv.Net().Stats()
	if st.MalformedDropped != 0 || st.MessagesRefused != 0 {
		t.Errorf("the server dropped %d malformed and refused %d messages from the TypeScript client", st.MalformedDropped, st.MessagesRefused)
	}

	// A second client: the server's module state moved on.
	if out := helloClient(t, dir, srv, "bob"); !strings.Contains(out, "reply: Hello, bob! You are greeting number 2.\n") {
		t.Fatalf("second client:\n%s", out)
	}
}

// TestTypeScriptClientUsesModuleSchemas: the client parses the server's
// ModuleSchemas announcement (§10.2), typed entries and their fields
// included, and with no schemas of its own accepts hello_reply on the
// strength of the announcement alone (its whole layout checked, §10.1).
func TestTypeScriptClientUsesModuleSchemas(t *testing.T) {
	dir := compiled(t)
	srv := startHello(t)
	out := helloClient(t, dir, srv, "cy", "--announced-only")
	for _, want := range []string{
		"hello/hello_greet 1000 c2s reliable 2..34 str@0 admitted=true fields=name:Str(32)\n",
		"hello/hello_reply 1001 s2c reliable 2..130 str@0 admitted=true fields=text:Str(128)\n",
		"reply: Hello, cy! You are greeting number 1.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Count(out, "schema rev ") != 2 {
		t.Errorf("want exactly the hello module's two types announced:\n%s", out)
	}
}

// hostileProxy relays UDP between a client and the server. It loses the
// first sealed datagram each way (the client's ClientFinished and the
// server's first answer) and every fourth after that, and toward the client
// it adds, after each datagram, a forged sealed frame, a truncated copy, a
// replay of the previous one and a malformed plain frame — all from the
// server's address as the client sees it.
type hostileProxy struct {
	front, back *net.UDPConn
	mu          sync.Mutex
	client      *net.UDPAddr
	lost        [2]int
	forged      int
}

func startProxy(t *testing.T, server netip.AddrPort) *hostileProxy {
	t.Helper()
	front, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(server))
	if err != nil {
		t.Fatal(err)
	}
	p := &hostileProxy{front: front, back: back}
	t.Cleanup(func() { front.Close(); back.Close() })
	var sealed [2]int
	lose := func(dir int, b []byte) bool {
		if len(b) == 0 || b[0] != 0x02 {
			return false
		}
		sealed[dir]++
		if sealed[dir] == 1 || sealed[dir]%4 == 0 {
			p.mu.Lock()
			p.lost[dir]++
			p.mu.Unlock()
			return true
		}
		return false
	}
	go func() { // client → server
		buf := make([]byte, 65536)
		for {
			n, from, err := front.ReadFromUDP(buf)
			if err != nil {
				return
			}
			p.mu.Lock()
			p.client = from
			p.mu.Unlock()
			if !lose(0, buf[:n]) {
				back.Write(buf[:n])
			}
		}
	}()
	go func() { // server → client, with forgeries
		buf := make([]byte, 65536)
		var prev []byte
		for {
			n, err := back.Read(buf)
			if err != nil {
				return
			}
			p.mu.Lock()
			to := p.client
			p.mu.Unlock()
			if to == nil {
				continue
			}
			d := append([]byte(nil), buf[:n]...)
			if !lose(1, d) {
				front.WriteToUDP(d, to)
			}
			if d[0] != 0x02 {
				continue
			}
			forged := append([]byte(nil), d...)
			forged[len(forged)-1] ^= 0x55 // breaks the tag
			junk := [][]byte{forged, d[:len(d)/2], {0x02}, {0x01, 0x4b, 0x52, 0x50, 0x53, 0xff}, {0x07, 1, 2, 3}}
			if prev != nil {
				junk = append(junk, prev) // a replay (or, if prev was lost, a late copy)
			}
			for _, j := range junk {
				front.WriteToUDP(j, to)
			}
			p.mu.Lock()
			p.forged += len(junk)
			p.mu.Unlock()
			prev = d
		}
	}()
	return p
}

// TestTypeScriptClientSurvivesLossAndForgeries: through the hostile proxy the
// client still completes the handshake, greets and reads the reply: it
// retransmits its lost ClientFinished, acknowledges what the server resends,
// and drops and counts every forged, truncated and replayed datagram
// without failing.
func TestTypeScriptClientSurvivesLossAndForgeries(t *testing.T) {
	dir := compiled(t)
	srv := startHello(t)
	p := startProxy(t, srv.Addr())
	port := p.front.LocalAddr().(*net.UDPAddr).Port
	out := runNode(t, dir, "examples/hello.js", "127.0.0.1", strconv.Itoa(port), srv.Pin(), "dee")
	if !strings.Contains(out, "reply: Hello, dee! You are greeting number 1.\n") {
		t.Fatalf("no reply through the lossy proxy:\n%s", out)
	}
	m := regexp.MustCompile(`dropped (\d+), refused (\d+), retransmitted (\d+), ignored (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no statistics line:\n%s", out)
	}
	dropped, _ := strconv.Atoi(m[1])
	retx, _ := strconv.Atoi(m[3])
	ignored, _ := strconv.Atoi(m[4])
	p.mu.Lock()
	lost, forged := p.lost, p.forged
	p.mu.Unlock()
	t.Logf("proxy lost %d client and %d server datagrams and forged %d; client: %s", lost[0], lost[1], forged, m[0])
	if retx < 1 {
		t.Errorf("the client's ClientFinished was lost but the client retransmitted nothing")
	}
	// Forgeries that arrive after the close are not counted; the rest are
	// security drops (forged, truncated, replayed) or ignored (not sealed).
	if dropped < 3 || ignored < 1 {
		t.Errorf("the client counted %d drops and ignored %d of %d forged datagrams", dropped, ignored, forged)
	}
	if m[2] != "0" {
		t.Errorf("the client refused %s messages from an honest server", m[2])
	}
	waitPlayers(t, srv, 0)
}
