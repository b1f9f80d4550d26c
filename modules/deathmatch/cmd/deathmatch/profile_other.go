//go:build !unix

package main

// watchProfile: no SIGUSR1 here; the profile hook is off.
func watchProfile() {}
