package pluginhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/internal/pluginwire"
)

// Description is a plugin's protocol version and manifest.
type Description = pluginwire.Description

// maxDescribe bounds what describe reads from a plugin.
const maxDescribe = 4 << 20

// Describe runs the plugin in describe mode (no serving, no handshake) and
// returns what it declares. It works whatever protocol version the plugin
// speaks, so it also tells why a plugin will not load.
func Describe(path string, args []string, timeout time.Duration) (Description, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), pluginwire.CookieKey+"="+pluginwire.CookieValue, pluginwire.DescribeEnv+"=1")
	var out, errb limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg != "" {
			return Description{}, fmt.Errorf("%s: %v: %s", path, err, msg)
		}
		return Description{}, fmt.Errorf("%s: %v (is it a sparkhost plugin built with plugin.Serve?)", path, err)
	}
	var d Description
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		return Description{}, fmt.Errorf("%s did not describe itself (is it a sparkhost plugin built with plugin.Serve?): %v", path, err)
	}
	return d, nil
}

type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxDescribe - b.Len(); room < len(p) {
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
