package admin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// errLineTooLong: a line over MaxRequest bytes; it is skipped, never cut.
var errLineTooLong = fmt.Errorf("line longer than %d KiB; nothing was run", MaxRequest>>10)

// ServeConsole reads command lines from r (the server's stdin; a LineReader
// reads its own lines) and runs each through exec, writing to w the output — with a final newline added
// if missing — or "error: MESSAGE". It prints no prompt and skips blank
// lines, so operators can pipe commands into the server. A last line
// without a newline is run too. It returns at the end of r, on a read
// error, or as soon as ctx is done, even while a command is running (its
// answer is then dropped) or a read is blocked (the reading goroutine
// exits with the read).
func ServeConsole(ctx context.Context, r io.Reader, w io.Writer, exec Executor) {
	lines := make(chan consoleLine)
	stop := make(chan struct{})
	defer close(stop)
	go readConsole(r, lines, stop)
	for {
		var l consoleLine
		var ok bool
		select {
		case <-ctx.Done():
			return
		case l, ok = <-lines:
			if !ok {
				return
			}
		}
		if l.err != nil {
			fmt.Fprintf(w, "error: %v\n", l.err)
			continue
		}
		if strings.TrimSpace(l.text) == "" || ctx.Err() != nil {
			continue
		}
		a, done := execUntil(ctx, exec, l.text)
		if !done {
			return
		}
		writeAnswer(w, a.out, a.err)
	}
}

type consoleLine struct {
	text string
	err  error // a skipped over-long line
}

// LineReader is an input that reads whole lines itself: a terminal's line
// editor (the program's, with history), which ServeConsole then reads
// instead of splitting the bytes of r.
type LineReader interface {
	// ReadLine returns the next line without its end; io.EOF ends the
	// console.
	ReadLine() (string, error)
}

func readConsole(r io.Reader, lines chan<- consoleLine, stop <-chan struct{}) {
	defer close(lines)
	var next func() (string, error)
	if lr, ok := r.(LineReader); ok {
		next = func() (string, error) {
			text, err := lr.ReadLine()
			if err == nil && len(text) > MaxRequest {
				return "", errLineTooLong
			}
			return text, err
		}
	} else {
		br := bufio.NewReader(r)
		next = func() (string, error) {
			text, _, err := readLine(br, MaxRequest)
			return text, err
		}
	}
	for {
		text, err := next()
		l := consoleLine{text: text}
		switch {
		case errors.Is(err, errLineTooLong):
			l.err = err
		case err != nil:
			return
		}
		select {
		case lines <- l:
		case <-stop:
			return
		}
	}
}

type answer struct {
	out string
	err error
}

// execUntil runs exec(line) but stops waiting when ctx is done (done false).
func execUntil(ctx context.Context, exec Executor, line string) (a answer, done bool) {
	ch := make(chan answer, 1)
	go func() {
		out, err := safeExec(exec, line)
		ch <- answer{out, err}
	}()
	select {
	case a = <-ch:
		return a, true
	case <-ctx.Done():
		return answer{}, false
	}
}

func writeAnswer(w io.Writer, out string, err error) {
	if err != nil {
		fmt.Fprintf(w, "error: %v\n", err)
		return
	}
	if out == "" {
		return
	}
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	io.WriteString(w, out)
}

// readLine reads one line of at most max bytes, without its "\n" or a
// "\r" before it. terminated tells whether the line ended with "\n" (false
// for a last line cut by EOF, which is returned with a nil error). A longer
// line is consumed up to its end and reported as errLineTooLong. At EOF with
// nothing read, err is io.EOF.
func readLine(br *bufio.Reader, max int) (line string, terminated bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > max+1 || len(buf)+len(chunk) == max+1 && err != nil {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return "", false, err
			}
			return "", false, errLineTooLong
		}
		buf = append(buf, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
			return strings.TrimSuffix(string(buf[:len(buf)-1]), "\r"), true, nil
		case err == io.EOF && len(buf) > 0:
			return strings.TrimSuffix(string(buf), "\r"), false, nil
		default:
			return "", false, err
		}
	}
}
