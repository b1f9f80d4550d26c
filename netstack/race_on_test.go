//go:build race

package netstack

// RaceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are meaningless under it (tests skip them).
const RaceEnabled = true
