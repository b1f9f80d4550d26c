package host_test

import (
	"errors"

	"github.com/sparkhost/sparkhost/netstack"
)

func asHandshake(err error, target **netstack.HandshakeError) bool { return errors.As(err, target) }
