//go:build !race

package netstack

// RaceEnabled is false: allocation counts are checked.
const RaceEnabled = false
