package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/host/testplugin"
)

func runModuleCapture(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := moduleMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestModuleDescribe(t *testing.T) {
	path := testplugin.Build(t, "./examples/greeter")
	code, out, errs := runModuleCapture("describe", path)
	want := "module greeter 1.0.0 (plugin protocol 1)\n" +
		"message types:\n" +
		"  1000 Shout c2s Reliable len 3..202 string str@0 admitted-only true\n" +
		"  1001 Shouted s2c Reliable len 2..302 string str@0 admitted-only true\n" +
		"console commands:\n" +
		"  greeter_stats  — shouts heard and players present\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stderr %q\ngot:\n%s\nwant:\n%s", code, errs, out, want)
	}
	// Another protocol version still describes itself, and says which.
	v2 := testplugin.Build(t, "./examples/greeter", "-X github.com/sparkhost/sparkhost/internal/pluginwire.protocolVersion=2")
	if code, out, _ := runModuleCapture("describe", v2); code != 0 || !strings.HasPrefix(out, "module greeter 1.0.0 (plugin protocol 2)\n") {
		t.Fatalf("v2: %d %q", code, out)
	}
}

func TestModuleDescribeErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: sparkhost module describe NAME|PATH"},
		{[]string{"describe"}, 2, "usage: sparkhost module describe NAME|PATH"},
		{[]string{"describe", "nosuch"}, 1, `sparkhost module describe: "nosuch" is not a built-in module`},
		{[]string{"describe", "/bin/true"}, 1, "sparkhost module describe: /bin/true did not describe itself (is it a sparkhost plugin built with plugin.Serve?)"},
		{[]string{"describe", "./missing"}, 1, "sparkhost module describe: ./missing: "},
	} {
		code, _, errs := runModuleCapture(tc.args...)
		if code != tc.code || !strings.HasPrefix(errs, tc.want) {
			t.Errorf("%q: exit %d %q, want %d %q…", tc.args, code, errs, tc.code, tc.want)
		}
	}
}
