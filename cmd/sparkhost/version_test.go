package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestUserFacingTextNamesProtocolV4: `version` and `bots --help` name the
// protocol this build speaks first (v4), and no user-facing text of these
// commands calls the build or its bots a v3 one.
func TestUserFacingTextNamesProtocolV4(t *testing.T) {
	var vout, verr bytes.Buffer
	if code := versionMain(nil, &vout, &verr); code != 0 {
		t.Fatalf("version: exit %d: %s", code, verr.String())
	}
	var bout, berr bytes.Buffer
	if code := runBots(context.Background(), []string{"--help"}, &bout, &berr); code != 0 {
		t.Fatalf("bots --help: exit %d: %s", code, berr.String())
	}
	want := fmt.Sprintf("protocol v%d", wire.ProtocolVersion4)
	stale := regexp.MustCompile(`protocol v3 client|\(protocol v3\)`)
	for name, text := range map[string]string{"version": vout.String(), "bots --help": bout.String()} {
		if !strings.Contains(text, want) || stale.MatchString(text) {
			t.Errorf("%s does not say %q (or still names v3 as its own):\n%s", name, want, text)
		}
	}
}
