package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sparkhost/sparkhost/clients/typescript/tsgen"
)

const genTSUsage = `usage: sparkhost gen-ts [--runtime IMPORT] [-o FILE] [SCHEMAS.json]
       sparkhost schema gen-ts ...   (the same command)

Generates TypeScript codecs for a server's module messages from its schema
export (format sparkhost-schemas/1; SCHEMAS.json, or standard input when it
is absent or "-"): an interface, encode and decode functions and the schema
of every message, and a decode dispatcher. The generated file imports the
client runtime of clients/typescript/src from IMPORT (default ./sparkhost).
See clients/typescript/README.md.
`

// genTSCommand is `sparkhost gen-ts`, also `sparkhost schema gen-ts`.
func genTSCommand(args []string) int { return genTSMain(args, os.Stdin, os.Stdout, os.Stderr) }

func genTSMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen-ts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, genTSUsage) }
	runtime := fs.String("runtime", tsgen.DefaultRuntimeImport, "import path of the client runtime")
	out := fs.String("o", "", "output file (default standard output)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	var in []byte
	var err error
	if fs.NArg() == 0 || fs.Arg(0) == "-" {
		in, err = io.ReadAll(stdin)
	} else {
		in, err = os.ReadFile(fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintln(stderr, "sparkhost gen-ts:", err)
		return 1
	}
	code, err := tsgen.GenerateWith(in, tsgen.Options{RuntimeImport: *runtime})
	if err != nil {
		fmt.Fprintln(stderr, "sparkhost gen-ts:", err)
		return 1
	}
	if *out == "" {
		_, err = stdout.Write(code)
	} else {
		err = os.WriteFile(*out, code, 0o644)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sparkhost gen-ts:", err)
		return 1
	}
	return 0
}
