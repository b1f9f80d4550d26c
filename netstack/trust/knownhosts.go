package trust

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/sparkhost/sparkhost/internal/atomicfile"
)

// Verdict is what a known_hosts file says about a server's identity key.
type Verdict uint8

// Verdicts of KnownHosts.Check. The zero Verdict is none of them: it comes only
// with an error about the input.
const (
	Known    Verdict = iota + 1 // an entry with this key
	Unknown                     // no entry for the host: trust on first use applies
	Mismatch                    // an entry with another key: refuse, never overwrite
)

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case Known:
		return "Known"
	case Unknown:
		return "Unknown"
	case Mismatch:
		return "Mismatch"
	}
	return "Verdict(?)"
}

var (
	// ErrIdentityMismatch is wrapped (through *MismatchError) when a server
	// presents a key other than the one recorded for it (§12: the client answers
	// HandshakeError ServerIdentityMismatch).
	ErrIdentityMismatch = errors.New("trust: server identity mismatch")
	// ErrKnownHostsSyntax: a line of the file is not "host:port ed25519:<key>".
	ErrKnownHostsSyntax = errors.New("trust: known_hosts syntax error")
	// ErrBadHostPort: a host:port argument is not host:port.
	ErrBadHostPort = errors.New("trust: bad host:port")
)

// MismatchError reports a recorded key that differs from the presented one.
type MismatchError struct {
	Path      string   // the known_hosts file
	Line      int      // the line holding the recorded key, 1-based
	HostPort  string   // normalised host:port
	Recorded  [32]byte // key on that line
	Presented [32]byte // key the server presented
}

// Error says what happened, where the recorded key is, and what to do.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("%v for %s: %s:%d records %s but the server presented %s. "+
		"Someone may be intercepting the connection, or the server's identity was replaced; nothing was sent. "+
		"If the server's operator confirms the new pin, delete line %d of %s and connect again.",
		ErrIdentityMismatch, e.HostPort, e.Path, e.Line, Pin(e.Recorded[:]), Pin(e.Presented[:]), e.Line, e.Path)
}

// Unwrap returns ErrIdentityMismatch.
func (e *MismatchError) Unwrap() error { return ErrIdentityMismatch }

// KnownHosts is a client's known_hosts file: lines "host:port ed25519:<key>".
// Everything from '#' to the end of a line is a comment; blank lines are
// allowed; "\r\n" line ends are accepted. Host names are compared without regard
// to case (DNS names are case-insensitive), ports as numbers.
//
// A line that does not parse makes OpenKnownHosts fail instead of being skipped:
// skipping it would turn its host back into Unknown, and trust on first use
// would then accept whatever key an attacker presents. If one host has several
// lines, every one of them must hold the presented key, else Check reports the
// first differing line (fail closed).
//
// It is safe for concurrent use within a process. Between processes, Record
// re-reads the file before it rewrites it, which keeps the window in which a
// concurrent writer's line could be lost to a few system calls.
type KnownHosts struct {
	path    string
	mu      sync.Mutex
	entries []knownEntry
}

type knownEntry struct {
	hostport string
	key      [32]byte
	line     int
}

// OpenKnownHosts reads the file at path. A missing file is an empty store;
// Record creates it.
func OpenKnownHosts(path string) (*KnownHosts, error) {
	k := &KnownHosts{path: path}
	raw, err := k.read()
	if err != nil {
		return nil, err
	}
	if k.entries, err = k.parse(raw); err != nil {
		return nil, err
	}
	return k, nil
}

// Path returns the file's path, for telling the user where a key was recorded.
func (k *KnownHosts) Path() string { return k.path }

// Check looks up hostport and compares pub with what is recorded. On Mismatch
// the error is a *MismatchError wrapping ErrIdentityMismatch.
func (k *KnownHosts) Check(hostport string, pub [32]byte) (Verdict, error) {
	hp, err := normalizeHostPort(hostport)
	if err != nil {
		return 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lookup(k.entries, hp, pub)
}

func (k *KnownHosts) lookup(entries []knownEntry, hp string, pub [32]byte) (Verdict, error) {
	found := false
	for _, e := range entries {
		if e.hostport != hp {
			continue
		}
		if e.key != pub {
			return Mismatch, &MismatchError{Path: k.path, Line: e.line, HostPort: hp, Recorded: e.key, Presented: pub}
		}
		found = true
	}
	if found {
		return Known, nil
	}
	return Unknown, nil
}

// Record adds "hostport pin" to the file (trust on first use; the caller tells
// the user, and records only a key whose handshake signature verified). It
// re-reads the file first: if the host is now recorded with the same key it does
// nothing, with another key it returns the *MismatchError and changes nothing.
// Otherwise it writes the old content plus the new line to a temporary file
// (mode 0600) beside it, syncs it and renames it over the file, so a reader sees
// the old file or the new one, never half of either. The directory is created
// with mode 0700 if missing.
func (k *KnownHosts) Record(hostport string, pub [32]byte) error {
	hp, err := normalizeHostPort(hostport)
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	raw, err := k.read()
	if err != nil {
		return err
	}
	current, err := k.parse(raw)
	if err != nil {
		return err
	}
	k.entries = current
	switch v, err := k.lookup(current, hp, pub); v {
	case Known:
		return nil
	case Mismatch:
		return err
	}
	var buf bytes.Buffer
	buf.Write(raw)
	if len(raw) > 0 && raw[len(raw)-1] != '\n' {
		buf.WriteByte('\n')
	}
	buf.WriteString(hp + " " + Pin(pub[:]) + "\n")
	if err := writeKnownHosts(k.path, buf.Bytes()); err != nil {
		return err
	}
	k.entries, err = k.parse(buf.Bytes())
	return err
}

func (k *KnownHosts) read() ([]byte, error) {
	raw, err := os.ReadFile(k.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trust: reading known_hosts: %w", err)
	}
	return raw, nil
}

func (k *KnownHosts) parse(raw []byte) ([]knownEntry, error) {
	var entries []knownEntry
	for i, line := range strings.Split(string(raw), "\n") {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		bad := func(why string) error {
			return fmt.Errorf("%w: %s:%d: %s; each line must be \"host:port ed25519:<key>\"; fix or delete that line",
				ErrKnownHostsSyntax, k.path, i+1, why)
		}
		if len(fields) != 2 {
			return nil, bad(fmt.Sprintf("%d fields, want 2", len(fields)))
		}
		hp, err := normalizeHostPort(fields[0])
		if err != nil {
			return nil, bad(strings.TrimPrefix(err.Error(), "trust: "))
		}
		key, err := ParsePin(fields[1])
		if err != nil {
			return nil, bad(strings.TrimPrefix(err.Error(), "trust: "))
		}
		entries = append(entries, knownEntry{hostport: hp, key: key, line: i + 1})
	}
	return entries, nil
}

// normalizeHostPort checks "host:port" (IPv6 hosts in brackets) and returns it
// with the host in lower case and the port in canonical decimal, so that
// equivalent spellings share one entry.
func normalizeHostPort(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || strings.ContainsAny(host, " \t#") {
		return "", fmt.Errorf("%w %q: want host:port, e.g. game.example:27015 or [::1]:27015", ErrBadHostPort, s)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return "", fmt.Errorf("%w %q: port must be 1..65535", ErrBadHostPort, s)
	}
	return net.JoinHostPort(strings.ToLower(host), strconv.FormatUint(n, 10)), nil
}

// writeKnownHosts replaces the known_hosts file atomically.
func writeKnownHosts(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("trust: writing known_hosts %s: %w", path, err)
	}
	return nil
}
