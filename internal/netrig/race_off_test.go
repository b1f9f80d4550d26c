//go:build !race

package netrig

const raceEnabled = false
