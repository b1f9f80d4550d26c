//go:build !linux

package tick

import (
	"errors"
	"time"
)

// sliceSupported says whether setSlice can work here.
const sliceSupported = false

// setSlice is Linux-only: elsewhere the game thread keeps the system's
// scheduling.
func setSlice(d time.Duration) (reset func() error, err error) {
	return nil, errors.New("only Linux takes a requested slice")
}
