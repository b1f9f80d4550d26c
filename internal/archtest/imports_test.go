package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const modulePath = "github.com/sparkhost/sparkhost"

// rule says which project packages the packages matching From may import
// (non-test imports). A package is matched by its path relative to the
// module root: "x" matches x and everything below it.
type rule struct {
	from   string
	allow  []string // project import prefixes allowed; nil means anything but deny
	deny   []string // project import prefixes refused
	reason string
}

// rules are ARCHITECTURE.md revision 3's arrows. Project packages outside
// every rule may import anything of the project but cmd/.
var rules = []rule{
	{from: "netstack", allow: []string{"netstack", "internal/atomicfile"},
		reason: "the transport knows nothing of games, modules, chat or Lua"},
	{from: "netstack/transport", allow: []string{"netstack/transport"},
		reason: "the transport seam moves datagrams and nothing else"},
	{from: "sim", allow: []string{"sim", "netstack/wire"},
		reason: "shared simulation code belongs to neither server nor client"},
	{from: "module", allow: []string{"module", "netstack/wire", "sim"},
		reason: "the module contract must not know the server"},
	{from: "runtimes", allow: []string{"runtimes", "module", "proto", "sim", "netstack/wire", "internal"},
		reason: "a runtime sees the server only through the module contract"},
	{from: "host", deny: []string{"runtimes", "client", "modules", "plugin", "cmd"},
		reason: "runtimes are registered by cmd, not imported by the host; the host is not a client"},
	{from: "host/supervisor", deny: []string{"runtimes", "client", "modules", "plugin", "cmd", "host/rooms", "host/match"},
		reason: "the supervisor runs instances behind module.Module and never imports a runtime; rooms as rules and matches are the host's"},
	{from: "host/rooms", deny: []string{"runtimes", "client", "modules", "plugin", "cmd", "host/hosttest", "host/testplugin"},
		reason: "a room runs its modules through the supervisor, never a runtime; the host's rooms are not a client"},
	{from: "host/rooms/lobby", allow: []string{"host/rooms/lobby", "module", "sim"},
		reason: "the lobby is rooms as rules: pure logic, no match, world, module or transport"},
	{from: "ops", deny: []string{"host", "runtimes", "modules", "client", "plugin", "cmd"},
		reason: "the operator's surfaces read snapshots; they never reach into the game"},
	{from: "client", allow: []string{"client", "netstack", "sim", "internal/cmdline"},
		reason: "a client is not a server"},
	{from: "plugin", allow: []string{"plugin", "module", "sim", "proto", "netstack/wire", "internal/kvfile", "internal/pluginwire", "internal/timerq", "internal/metricset"},
		reason: "the SDK builds on the module contract and nothing of the server"},
	{from: "modules", deny: []string{"host", "runtimes", "cmd"},
		reason: "a module sees the server only through the SDK"},
	{from: "proto", allow: []string{"proto"}, reason: "the plugin protocol is generated code"},
	{from: "internal", deny: []string{"cmd", "host", "runtimes", "ops", "plugin", "modules", "client"},
		reason: "internal/ holds leaf utilities: it imports nothing of the project above it"},
	{from: "internal/v3strict", allow: []string{"internal/v3strict"},
		reason: "the strict v3 client is written from the v3 contract alone: it shares no code with what it tests"},
}

func under(rel, prefix string) bool { return rel == prefix || strings.HasPrefix(rel, prefix+"/") }

// ruleFor returns the most specific rule for a package.
func ruleFor(rel string) *rule {
	var best *rule
	for i := range rules {
		r := &rules[i]
		if under(rel, r.from) && (best == nil || len(r.from) > len(best.from)) {
			best = r
		}
	}
	return best
}

// check returns a line for every import of pkg (relative path) that breaks
// its rule.
func check(pkg string, imports []string) []string {
	var bad []string
	r := ruleFor(pkg)
	for _, imp := range imports {
		rel, ok := strings.CutPrefix(imp, modulePath+"/")
		if !ok {
			continue // the standard library or a dependency
		}
		switch {
		case under(rel, "cmd"):
			bad = append(bad, pkg+" imports "+rel+": nothing imports the command line")
		case r == nil:
		case r.allow != nil && !matchesAny(rel, r.allow):
			bad = append(bad, pkg+" imports "+rel+": "+r.reason)
		case matchesAny(rel, r.deny):
			bad = append(bad, pkg+" imports "+rel+": "+r.reason)
		}
	}
	return bad
}

func matchesAny(rel string, prefixes []string) bool {
	for _, p := range prefixes {
		if under(rel, p) {
			return true
		}
	}
	return false
}

type listed struct {
	ImportPath string
	Imports    []string
}

// TestImportsFollowTheArchitecture reads every package's imports with
// `go list` and checks them against the rules.
func TestImportsFollowTheArchitecture(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var pkgs int
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel, ok := strings.CutPrefix(p.ImportPath, modulePath+"/")
		if !ok {
			continue
		}
		pkgs++
		for _, line := range check(rel, p.Imports) {
			t.Error(line)
		}
	}
	if pkgs < 20 {
		t.Fatalf("go list found %d packages of the project; is this the repository?", pkgs)
	}
}

// TestRulesCatchCrossings proves the rules bite: each of these imports
// crosses a boundary.
func TestRulesCatchCrossings(t *testing.T) {
	for _, c := range []struct{ pkg, imp string }{
		{"netstack", "sim/gamemsg"},
		{"netstack/wire", "module"},
		{"module", "host/replicate"},
		{"module", "host/admin"},
		{"host", "runtimes/lua"},
		{"host", "runtimes"},
		{"host/supervisor", "runtimes/pluginhost"},
		{"host/supervisor", "host/rooms/lobby"},
		{"host/supervisor", "host/rooms"},
		{"host/rooms/lobby", "host/supervisor"},
		{"host/rooms/lobby", "host/match"},
		{"host/rooms", "runtimes/lua"},
		{"host/rooms", "host/testplugin"},
		{"runtimes/lua", "host/admin"},
		{"runtimes/pluginhost", "netstack"},
		{"netstack/transport", "netstack/wire"},
		{"internal/kvfile", "host"},
		{"client/predict", "host/movement"},
		{"modules/deathmatch", "host/lagcomp"},
		{"plugin", "host/replicate"},
		{"sim/lagcomp", "host/replicate"},
		{"ops", "host"},
		{"host", "cmd/sparkhost"},
	} {
		if len(check(c.pkg, []string{modulePath + "/" + c.imp})) == 0 {
			t.Errorf("%s importing %s passes the rules", c.pkg, c.imp)
		}
	}
	for _, c := range []struct{ pkg, imp string }{
		{"host", "module"}, {"host", "sim/gamemsg"}, {"runtimes/lua", "module"}, {"client", "sim/movement"},
		{"modules/deathmatch", "plugin"}, {"module", "sim/lagcomp"}, {"host/supervisor", "host/admin"},
		{"host", "host/supervisor"}, {"cmd/sparkhost", "runtimes"},
		{"host/rooms", "host/supervisor"}, {"host/rooms/lobby", "sim/roomauth"}, {"host/rooms/lobby", "module"}, {"netstack", "netstack/transport"},
	} {
		if bad := check(c.pkg, []string{modulePath + "/" + c.imp}); len(bad) != 0 {
			t.Errorf("%s importing %s is refused: %v", c.pkg, c.imp, bad)
		}
	}
}
