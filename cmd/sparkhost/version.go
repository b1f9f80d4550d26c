package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// buildInfo is what the binary knows of how it was built.
type buildInfo struct {
	Version  string // -ldflags "-X main.version=…", else the module version, else version
	Module   string // the main module's path and version ("(devel)" for a build in a work tree)
	Revision string // VCS revision, "" when unknown
	Time     string // VCS commit time
	Modified bool   // built from a work tree with changes
	Go       string
}

// releaseRE matches a tagged module version; pseudoRE the timestamp and
// revision of a pseudo-version (an untagged commit: the revision line says
// which).
var (
	releaseRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$`)
	pseudoRE  = regexp.MustCompile(`[0-9]{14}-[0-9a-f]{12}`)
)

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Module = bi.Main.Path + " " + bi.Main.Version
	if v := bi.Main.Version; version == defaultVersion && releaseRE.MatchString(v) && !pseudoRE.MatchString(v) {
		b.Version = v // go install …@v1.2.3
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

func versionCommand(args []string) int { return versionMain(args, os.Stdout, os.Stderr) }

func versionMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: sparkhost version (prints the version, the VCS revision and the Go version)")
		return 2
	}
	b := readBuildInfo()
	fmt.Fprintf(stdout, "sparkhost %s (protocol v%d; v%d to older clients on private binds)\n", b.Version, wire.ProtocolVersion4, wire.ProtocolVersion)
	if b.Module != "" {
		fmt.Fprintf(stdout, "module %s\n", b.Module)
	}
	switch {
	case b.Revision == "":
		fmt.Fprintln(stdout, "revision unknown (built without VCS information)")
	case b.Modified:
		fmt.Fprintf(stdout, "revision %s (%s, with uncommitted changes)\n", b.Revision, b.Time)
	default:
		fmt.Fprintf(stdout, "revision %s (%s)\n", b.Revision, b.Time)
	}
	fmt.Fprintf(stdout, "go %s %s/%s\n", b.Go, runtime.GOOS, runtime.GOARCH)
	return 0
}
