package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

const healthUsage = `usage: sparkhost health [--addr HOST:PORT] [--path /healthz] [--timeout DURATION]

Asks a running server's ops listener ([ops] listen) whether it is healthy and
exits 0 if it answers 200, 1 otherwise, printing its one-line answer. It is
the probe of the Docker image's HEALTHCHECK (the image has no shell, curl or
wget); use --path /readyz for readiness.
`

func healthCommand(args []string) int { return healthMain(args, os.Stdout, os.Stderr) }

func healthMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, healthUsage); fs.PrintDefaults() }
	addr := fs.String("addr", "127.0.0.1:9150", "the ops listener's address (ops.listen)")
	path := fs.String("path", "/healthz", "the probe: /healthz or /readyz")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	client := &http.Client{Timeout: *timeout}
	resp, err := client.Get("http://" + *addr + *path)
	if err != nil {
		fmt.Fprintf(stderr, "sparkhost health: no answer from %s: %v (is ops.listen set to it?)\n", *addr, err)
		return 1
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	line = strings.TrimSpace(line)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "sparkhost health: %s answered %d: %s\n", *path, resp.StatusCode, line)
		return 1
	}
	fmt.Fprintln(stdout, line)
	return 0
}
