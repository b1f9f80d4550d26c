package mmo_test

import (
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo"
)

// TestCommandUsageListsArgumentsOnly: the console prints "NAME USAGE", so a
// usage that repeats the name shows it twice in help.
func TestCommandUsageListsArgumentsOnly(t *testing.T) {
	for _, c := range mmo.New().Manifest().Commands {
		if first, _, _ := strings.Cut(c.Usage, " "); first == c.Name {
			t.Errorf("command %s: usage %q repeats the name", c.Name, c.Usage)
		}
	}
}
