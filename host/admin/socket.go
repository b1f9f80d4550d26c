package admin

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// SocketName is the admin socket's file name inside the data directory.
const SocketName = "admin.sock"

// Limits of the socket wire format (see the package doc).
const (
	// MaxRequest is the longest request line in bytes, without its "\n".
	MaxRequest = 64 << 10
	// MaxResponse is the longest answer body in bytes.
	MaxResponse = 16 << 20
)

// Tunables of the socket server; variables so that tests can shorten them.
var (
	requestTimeout = 10 * time.Second // to send the request, and to take the answer
	maxConnections = 16               // served at once; more are answered "busy"
)

// Errors of ListenSocket and Call that callers may match.
var (
	// ErrServerRunning: ListenSocket found a live server on the socket.
	ErrServerRunning = errors.New("another server is running")
	// ErrNoServer: Call found no server listening on the socket.
	ErrNoServer = errors.New("no server is running")
)

// Executor runs one command line and returns its answer. The server
// provides it: it hands the line to the game thread and waits. It is called
// from the front ends' goroutines, possibly several at once, and must return
// once the server stops.
type Executor func(line string) (string, error)

// SocketServer serves the admin socket: one command per connection, run
// through its Executor.
type SocketServer struct {
	path  string
	file  os.FileInfo // the socket file as created, so Close removes only ours
	ln    *net.UnixListener
	exec  Executor
	log   *slog.Logger
	slots chan struct{} // one per connection being served
	// timeout is requestTimeout as of ListenSocket.
	timeout time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool

	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when the accept loop has returned
	closeOnce sync.Once
	closeErr  error
	busy      atomic.Uint64
}

// ListenSocket creates the Unix socket at path, mode 0600 whatever the
// umask, and serves it until Close; nil log discards. The directory must
// exist. A socket file left by a crashed server (nothing answers on it) is
// replaced; if a server answers on it, ListenSocket fails with
// ErrServerRunning and leaves it alone. Anything else at path is refused.
//
// The socket is bound in a fresh 0700 directory beside path, chmod'ed, then
// hard-linked to path, so no one else can ever connect to it and two
// servers starting together cannot both win.
func ListenSocket(path string, exec Executor, log *slog.Logger) (*SocketServer, error) {
	if exec == nil {
		return nil, errors.New("admin socket: nil Executor")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("admin socket: directory %s does not exist; create the data directory first", dir)
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	ln, file, err := listenPrivate(path)
	if err != nil {
		return nil, err
	}
	s := &SocketServer{
		path: path, file: file, ln: ln, exec: exec, log: log,
		slots: make(chan struct{}, maxConnections), timeout: requestTimeout,
		conns: make(map[net.Conn]struct{}),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go s.serve()
	return s, nil
}

// removeStale removes a socket file at path that nothing answers on.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("admin socket: %s exists and is not a socket; move it away and start again", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return runningError(path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		// Not provably dead (no permission, or a live server too busy to
		// accept): leave it to the operator.
		return fmt.Errorf("admin socket: %s exists and may belong to a running server (%v); stop that server, or remove the file if none is running", path, err)
	}
	// Remove it only if it is still the file we found dead.
	if again, err := os.Lstat(path); err != nil || !os.SameFile(fi, again) {
		return runningError(path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("admin socket: removing the stale socket %s: %w", path, err)
	}
	return nil
}

func runningError(path string) error {
	return fmt.Errorf("%w with data dir %s (its admin socket %s answers); stop it first, or give this server another data dir",
		ErrServerRunning, filepath.Dir(path), path)
}

// listenPrivate binds the socket in a private directory, restricts it to
// 0600 and links it into place; link fails if path exists, unlike rename.
func listenPrivate(path string) (*net.UnixListener, os.FileInfo, error) {
	tmpDir, err := os.MkdirTemp(filepath.Dir(path), ".a") // mode 0700; short, for the sun_path limit
	if err != nil {
		return nil, nil, fmt.Errorf("admin socket: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		err = fmt.Errorf("admin socket: listening on %s: %w", path, err)
		if len(tmp) >= 100 {
			err = fmt.Errorf("%w; Unix socket paths are limited to about 100 bytes: use a shorter data directory path", err)
		}
		return nil, nil, err
	}
	ln.SetUnlinkOnClose(false) // the socket lives at path, removed by Close
	if err = os.Chmod(tmp, 0o600); err == nil {
		err = os.Link(tmp, path)
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = os.Lstat(path)
	}
	if err != nil {
		ln.Close()
		if errors.Is(err, fs.ErrExist) {
			return nil, nil, runningError(path)
		}
		return nil, nil, fmt.Errorf("admin socket: creating %s: %w", path, err)
	}
	return ln, fi, nil
}

// Path returns the socket's path.
func (s *SocketServer) Path() string { return s.path }

// Busy returns how many connections were turned away because all slots
// were taken.
func (s *SocketServer) Busy() uint64 { return s.busy.Load() }

// Close stops accepting, drops the connections being served and removes the
// socket file (if it is still the one ListenSocket created). It does not
// wait for commands still in the Executor; their answers are dropped.
// Calling Close again returns nil.
func (s *SocketServer) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		close(s.stop)
		s.closeErr = s.ln.Close()
		<-s.done
		if fi, err := os.Lstat(s.path); err == nil && os.SameFile(fi, s.file) {
			if err := os.Remove(s.path); err != nil && s.closeErr == nil {
				s.closeErr = fmt.Errorf("admin socket: %w", err)
			}
		}
	})
	return s.closeErr
}

func (s *SocketServer) serve() {
	defer close(s.done)
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off, don't spin.
			s.log.Warn("admin socket: accept failed", "err", err)
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		select {
		case s.slots <- struct{}{}:
		default:
			s.busy.Add(1)
			c.SetWriteDeadline(time.Now().Add(time.Second))
			writeResponse(c, "", fmt.Errorf("server busy: %d admin connections are open; try again", cap(s.slots)))
			c.Close()
			continue
		}
		if !s.track(c) {
			c.Close()
			<-s.slots
			return
		}
		go s.handle(c)
	}
}

func (s *SocketServer) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *SocketServer) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *SocketServer) handle(c net.Conn) {
	defer func() {
		s.untrack(c)
		c.Close()
		<-s.slots
	}()
	c.SetReadDeadline(time.Now().Add(s.timeout))
	line, err := readRequest(c, s.timeout)
	if err != nil {
		s.log.Debug("admin socket: bad request", "err", err)
		c.SetWriteDeadline(time.Now().Add(s.timeout))
		writeResponse(c, "", err)
		return
	}
	out, err := safeExec(s.exec, line)
	if err != nil {
		s.log.Warn("admin command via socket failed", "line", line, "err", err)
	} else {
		s.log.Info("admin command via socket", "line", line)
	}
	c.SetWriteDeadline(time.Now().Add(s.timeout))
	if err := writeResponse(c, out, err); err != nil {
		s.log.Debug("admin socket: answer not delivered", "err", err)
	}
}

// safeExec calls exec, turning a panic into an error: a fault behind the
// admin front ends must not take the server down.
func safeExec(exec Executor, line string) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("internal error running the command: %v", p)
		}
	}()
	return exec(line)
}

// readRequest reads the request line; only a complete line is returned.
func readRequest(c net.Conn, timeout time.Duration) (string, error) {
	br := bufio.NewReader(io.LimitReader(c, MaxRequest+1))
	line, terminated, err := readLine(br, MaxRequest)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "", fmt.Errorf("no complete request line within %s; nothing was run", timeout)
	case err == io.EOF || err == nil && !terminated:
		return "", errors.New("the request line did not end with a newline; nothing was run")
	case err != nil:
		return "", err
	case strings.IndexByte(line, 0) >= 0:
		return "", errors.New("the request line holds a NUL byte; nothing was run")
	}
	return line, nil
}

// writeResponse writes one frame: "OK n\n" + out, or "ERR n\n" + message.
func writeResponse(w io.Writer, out string, err error) error {
	status, body := "OK", out
	if err == nil && len(out) > MaxResponse {
		err = fmt.Errorf("the answer is %d bytes, over the admin socket's limit of %d", len(out), MaxResponse)
	}
	if err != nil {
		status, body = "ERR", err.Error()
		if len(body) > MaxResponse {
			body = body[:MaxResponse]
		}
		if body == "" {
			body = "command failed"
		}
	}
	frame := make([]byte, 0, len(status)+12+len(body))
	frame = append(frame, status...)
	frame = append(frame, ' ')
	frame = strconv.AppendInt(frame, int64(len(body)), 10)
	frame = append(frame, '\n')
	frame = append(frame, body...)
	_, werr := w.Write(frame)
	return werr
}
