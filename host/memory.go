package host

import (
	"log/slog"
	"runtime/debug"

	"github.com/sparkhost/sparkhost/host/config"
)

// applyMemoryLimit sets the process's Go memory limit to
// server.memory_limit_mib while the server runs, when it is set: the
// collector then runs sooner as the process nears it and the runtime
// returns free pages, so the resident size of a server holding tens of
// thousands of sessions stays near what they use rather than twice it
// (GOGC's headroom). The limit is the process's (as GOMEMLIMIT); it
// returns what restores the one before.
func applyMemoryLimit(cfg *config.Config, log *slog.Logger) (restore func()) {
	limit := cfg.MemoryLimit()
	if limit <= 0 {
		return func() {}
	}
	before := debug.SetMemoryLimit(limit)
	log.Info("memory limit set", "mib", cfg.Server.MemoryLimitMiB)
	return func() { debug.SetMemoryLimit(before) }
}
