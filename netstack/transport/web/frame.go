package web

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/sparkhost/sparkhost/netstack/transport"
)

// A WebTransport datagram that is larger than its sender's current
// datagram maximum (the v4 ClientHello's 1,200 bytes, over a path whose
// QUIC packets are small) travels on the sender's overflow stream instead:
// one unidirectional stream per direction, opened at first need, carrying
// frames of a 2-byte big-endian length L (1..65,507) and L bytes of
// datagram. A receiver treats each frame as a datagram received.

// maxFrame is the largest datagram a frame carries.
const maxFrame = transport.MaxUDPDatagram

// errBadFrame is a frame whose length is 0 or over maxFrame: the stream's
// sender does not follow the protocol, and the session ends.
var errBadFrame = errors.New("web: overflow frame of length 0 or over 65507")

// appendFrame appends the frame of datagram d to dst.
func appendFrame(dst, d []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(d)))
	return append(dst, d...)
}

// readFrame reads one frame from r and returns its datagram, in a new
// buffer of exactly its length (the length is checked before anything is
// allocated). io.EOF: the stream ended between frames.
func readFrame(r io.Reader) ([]byte, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(hdr[:]))
	if n == 0 || n > maxFrame {
		return nil, errBadFrame
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("web: overflow frame cut short: %w", io.ErrUnexpectedEOF)
	}
	return b, nil
}
