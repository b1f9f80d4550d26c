package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/host/admin"
)

const adminUsage = `usage: sparkhost admin [--data-dir DIR] COMMAND [ARGS...]

Runs one administration command on the server started with data directory
DIR, through its socket DIR/admin.sock, and prints the answer. Only the user
running the server can connect. 'sparkhost admin help' lists the commands.

flags:
  --data-dir DIR   the server's data directory (default data, as for run)
`

// adminTimeout bounds one command, including its run on the server's game
// thread (the server itself gives up on a command after about 35 s).
const adminTimeout = 60 * time.Second

// adminCommand implements `sparkhost admin`: exit 0 with the answer on
// stdout, 1 when the command or the connection failed, 2 for a usage error.
func adminCommand(args []string) int {
	return runAdmin(args, os.Stdout, os.Stderr)
}

func runAdmin(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and usage are printed below
	dataDir := fs.String("data-dir", "data", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, adminUsage)
			return 0
		}
		fmt.Fprintf(stderr, "sparkhost admin: %v\n%s", err, adminUsage)
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, "sparkhost admin: no command given\n"+adminUsage)
		return 2
	}
	if *dataDir == "" {
		fmt.Fprint(stderr, "sparkhost admin: --data-dir must not be empty\n")
		return 2
	}
	out, err := admin.Call(filepath.Join(*dataDir, admin.SocketName), admin.JoinLine(fs.Args()), adminTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "sparkhost admin: %v\n", err)
		return 1
	}
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	io.WriteString(stdout, out)
	return 0
}
