package admin

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestServeConsole(t *testing.T) {
	r := testRegistry(t)
	input := "echo a 'b c'\n\n   \nnope\nfail now\r\nraw 'two\\nlines'\necho last"
	var out strings.Builder
	ServeConsole(context.Background(), strings.NewReader(input), &out, r.Execute)
	want := "a|b c\n" +
		"error: unknown command \"nope\"; type help for the list\n" +
		"error: it failed: now\n" +
		"two\\nlines\n" +
		"last\n"
	if out.String() != want {
		t.Fatalf("console output:\n%q\nwant:\n%q", out.String(), want)
	}
}

func TestServeConsoleSkipsOverlongLines(t *testing.T) {
	r := testRegistry(t)
	input := "echo " + strings.Repeat("x", MaxRequest) + "\necho after\n"
	var out strings.Builder
	ServeConsole(context.Background(), strings.NewReader(input), &out, r.Execute)
	want := "error: line longer than 64 KiB; nothing was run\nafter\n"
	if out.String() != want {
		t.Fatalf("console output %q; want %q", out.String(), want)
	}
}

func TestServeConsoleStopsOnContextWhileReading(t *testing.T) {
	pr, pw := io.Pipe() // a stdin nobody writes to
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		ServeConsole(ctx, pr, io.Discard, NewRegistry().Execute)
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("ServeConsole did not return after cancel")
	}
}

func TestServeConsoleStopsOnContextWhileExecuting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	exec := func(string) (string, error) { close(started); <-release; return "late", nil }
	var mu sync.Mutex
	var out strings.Builder
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	done := make(chan struct{})
	go func() {
		ServeConsole(ctx, strings.NewReader("stuck\n"), w, exec)
		close(done)
	}()
	<-started
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("ServeConsole waited for a running command after cancel")
	}
	mu.Lock()
	defer mu.Unlock()
	if out.Len() != 0 {
		t.Fatalf("wrote %q after cancel", out.String())
	}
}

func TestServeConsoleLineByLine(t *testing.T) {
	// Answers come before the next line is read: an operator piping into
	// the server sees each answer in turn.
	pr, pw := io.Pipe()
	outR, outW := io.Pipe()
	go ServeConsole(context.Background(), pr, outW, testRegistry(t).Execute)
	answers := bufio.NewReader(outR)
	for _, word := range []string{"one", "two"} {
		io.WriteString(pw, "echo "+word+"\n")
		got, err := answers.ReadString('\n')
		if err != nil || got != word+"\n" {
			t.Fatalf("answer %q, %v; want %q", got, err, word)
		}
	}
	pw.Close()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestReadLine(t *testing.T) {
	const max = 8
	cases := []struct {
		name, input string
		lines       []string
		errs        []error
	}{
		{"lines", "a\nb\r\nc", []string{"a", "b", "c"}, []error{nil, nil, nil}},
		{"exactly max", "12345678\n", []string{"12345678"}, []error{nil}},
		{"exactly max at EOF", "12345678", []string{"12345678"}, []error{nil}},
		{"one over", "123456789\nok\n", []string{"", "ok"}, []error{errLineTooLong, nil}},
		{"one over at EOF", "123456789", []string{""}, []error{errLineTooLong}},
		{"far over", strings.Repeat("y", 10000) + "\nok\n", []string{"", "ok"}, []error{errLineTooLong, nil}},
		{"empty lines", "\n\n", []string{"", ""}, []error{nil, nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tc.input), 16)
			for i, want := range tc.lines {
				got, _, err := readLine(br, max)
				if got != want || !errors.Is(err, tc.errs[i]) {
					t.Fatalf("line %d = %q, %v; want %q, %v", i, got, err, want, tc.errs[i])
				}
			}
			if _, _, err := readLine(br, max); err != io.EOF {
				t.Fatalf("after the last line: %v; want io.EOF", err)
			}
		})
	}
}
