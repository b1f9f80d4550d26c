//go:build !linux

package client

import (
	"errors"
	"io"
)

func echoOff(io.Reader) (func(), error) {
	return nil, errors.New("reading a password without echo is supported on Linux; give it as an argument")
}
