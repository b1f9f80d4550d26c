package main

import (
	"bytes"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"text/template"
)

const pluginUsage = `usage: sparkhost plugin init DIR [--name NAME] [--module PATH] [--sdk CHECKOUT]

Makes DIR a Go module holding a small, working sparkhost plugin (a Ping/Pong
module to grow from), built against the sparkhost checkout CHECKOUT through a
replace directive, so that it builds offline and outside this repository:

  cd DIR && go build -o NAME . && sparkhost run --module ./NAME

flags:
  --name NAME        the module's name (default: DIR's base name); a-z, 0-9, _
  --module PATH      the Go module path of the plugin (default: example.com/NAME)
  --sdk CHECKOUT     the sparkhost checkout to build against (default: the
                     current directory or the nearest parent that is one)
`

//go:embed plugintemplate/*.tmpl
var pluginTemplates embed.FS

// sdkModule is the module path of the sparkhost SDK.
const sdkModule = "github.com/sparkhost/sparkhost"

var pluginNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// pluginCommand runs `sparkhost plugin ...`.
func pluginCommand(args []string) int { return pluginMain(args, os.Stdout, os.Stderr) }

func pluginMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "init" {
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, pluginUsage)
			return 0
		}
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	fs := flag.NewFlagSet("plugin init", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("name", "", "")
	modPath := fs.String("module", "", "")
	sdk := fs.String("sdk", "", "")
	rest := args[1:]
	var dir string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		dir, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil || dir == "" || fs.NArg() > 0 {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, pluginUsage)
			return 0
		}
		fmt.Fprintln(stderr, "sparkhost plugin init: give one directory; run 'sparkhost plugin --help'")
		return 2
	}
	if err := initPlugin(dir, *name, *modPath, *sdk, stdout); err != nil {
		fmt.Fprintln(stderr, "sparkhost plugin init:", err)
		return 1
	}
	return 0
}

// pluginScaffold is what the templates are filled with.
type pluginScaffold struct {
	Name, ModulePath, SDK, GoVersion string
	PingID, PongID                   int
	Requires                         string // the SDK's own requirements, one per line
}

func initPlugin(dir, name, modPath, sdk string, stdout io.Writer) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if name == "" {
		name = strings.ReplaceAll(strings.ToLower(filepath.Base(abs)), "-", "_")
	}
	if !pluginNameRE.MatchString(name) {
		return fmt.Errorf("module name %q: use 1..32 of a-z, 0-9 and _, a letter first (--name)", name)
	}
	if modPath == "" {
		modPath = "example.com/" + name
	}
	if sdk == "" {
		if sdk, err = findCheckout(); err != nil {
			return err
		}
	} else if sdk, err = filepath.Abs(sdk); err != nil {
		return err
	}
	if !isCheckout(sdk) {
		return fmt.Errorf("%s is not a sparkhost checkout (its go.mod must say module github.com/sparkhost/sparkhost); give --sdk", sdk)
	}
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty; give a new or empty directory", abs)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}
	s := pluginScaffold{Name: name, ModulePath: modPath, SDK: sdk, GoVersion: goLine(sdk), PingID: 1500, PongID: 1501,
		Requires: sdkRequirements(sdk)}
	for file, tmpl := range map[string]string{"main.go": "plugintemplate/main.go.tmpl", "go.mod": "plugintemplate/go.mod.tmpl"} {
		var b bytes.Buffer
		if err := template.Must(template.ParseFS(pluginTemplates, tmpl)).Execute(&b, s); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(abs, file), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	// The SDK's own checksums cover every module the plugin needs.
	if sum, err := os.ReadFile(filepath.Join(sdk, "go.sum")); err == nil {
		if err := os.WriteFile(filepath.Join(abs, "go.sum"), sum, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "created plugin %s in %s (module %s, SDK %s)\n", name, abs, modPath, sdk)
	fmt.Fprintf(stdout, "build it: cd %s && go build -o %s . && sparkhost run --module ./%s\n", abs, name, name)
	return nil
}

// sdkRequirements are the require lines of the checkout's go.mod, as
// indirect requirements of the plugin: with them (and the checkout's
// go.sum) the plugin builds from the module cache alone, the SDK's
// dependencies at exactly the versions the server was built with.
func sdkRequirements(sdk string) string {
	b, _ := os.ReadFile(filepath.Join(sdk, "go.mod"))
	var out strings.Builder
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "require (":
			in = true
		case in && t == ")":
			in = false
		case in && t != "":
			mod, _, _ := strings.Cut(t, "//")
			out.WriteString("\t" + strings.TrimSpace(mod) + " // indirect\n")
		case strings.HasPrefix(t, "require ") && !strings.HasSuffix(t, "("):
			mod, _, _ := strings.Cut(strings.TrimPrefix(t, "require "), "//")
			out.WriteString("\t" + strings.TrimSpace(mod) + " // indirect\n")
		}
	}
	return out.String()
}

// findCheckout walks up from the working directory to a sparkhost checkout.
func findCheckout() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isCheckout(d) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no sparkhost checkout here or above; give its directory with --sdk")
		}
	}
}

func isCheckout(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module "+sdkModule+"\n"))
}

// goLine is the go version line of the checkout's go.mod (the plugin needs
// at least that), or this toolchain's.
func goLine(sdk string) string {
	b, _ := os.ReadFile(filepath.Join(sdk, "go.mod"))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "go "); ok {
			return v
		}
	}
	return strings.TrimPrefix(runtime.Version(), "go")
}
