package admin

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CommandError is a command's failure as the server reported it (an "ERR"
// answer): the command was refused or failed, the connection worked.
type CommandError struct {
	Message string
}

func (e *CommandError) Error() string { return e.Message }

// Call sends one command line to the admin socket at path and returns the
// server's answer. A failure the server reports is a *CommandError; no
// server on path is an error wrapping ErrNoServer ("no server is running
// with data dir DIR (socket PATH)"). timeout bounds the whole exchange,
// including the command's run time on the server; 0 means no limit.
func Call(path string, line string, timeout time.Duration) (string, error) {
	if strings.ContainsAny(line, "\n\x00") {
		return "", errors.New("the command line must not contain a newline or a NUL byte")
	}
	if len(line) > MaxRequest {
		return "", fmt.Errorf("the command line is %d bytes; the limit is %d", len(line), MaxRequest)
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	d := net.Dialer{Deadline: deadline}
	c, err := d.Dial("unix", path)
	if err != nil {
		return "", dialError(path, err)
	}
	defer c.Close()
	c.SetDeadline(deadline)
	_, werr := io.WriteString(c, line+"\n")
	// Read even if the write failed: a busy server answers and hangs up
	// before reading the request.
	status, body, err := readResponse(bufio.NewReader(c))
	if err != nil {
		if werr != nil {
			err = werr
		}
		return "", exchangeError(path, timeout, err)
	}
	if status == "ERR" {
		return "", &CommandError{Message: body}
	}
	return body, nil
}

func dialError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w with data dir %s (socket %s)", ErrNoServer, filepath.Dir(path), path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot connect to %s: permission denied; run sparkhost admin as the user the server runs as", path)
	}
	return fmt.Errorf("connecting to %s: %w", path, err)
}

func exchangeError(path string, timeout time.Duration, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("no answer from the server within %s (socket %s); it may be stuck or very busy", timeout, path)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err // its addresses name the server's private bind path
	}
	return fmt.Errorf("admin socket %s: %w", path, err)
}

// readResponse reads one "STATUS LENGTH\n" + body frame.
func readResponse(br *bufio.Reader) (status, body string, err error) {
	header, err := br.ReadSlice('\n') // bounded by the reader's buffer
	if err != nil {
		if err == io.EOF {
			err = errors.New("the server closed the connection without an answer")
		}
		return "", "", err
	}
	status, size, _ := strings.Cut(strings.TrimSuffix(string(header), "\n"), " ")
	n, nerr := strconv.Atoi(size)
	if status != "OK" && status != "ERR" || nerr != nil || n < 0 || n > MaxResponse {
		return "", "", fmt.Errorf("malformed answer header %q; is this a sparkhost admin socket of the same version?", truncate(string(header), 40))
	}
	buf := make([]byte, n)
	if got, err := io.ReadFull(br, buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			err = fmt.Errorf("the answer was cut short after %d of %d bytes", got, n)
		}
		return "", "", err
	}
	return status, string(buf), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
