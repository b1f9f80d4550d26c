package prefetch

// lines issues PREFETCHT0 for count lines from start (prefetch_amd64.s).
//
//go:noescape
func lines(start, count uintptr)
