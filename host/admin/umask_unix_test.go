//go:build unix

package admin

import "syscall"

func setUmask(mask int) int { return syscall.Umask(mask) }
