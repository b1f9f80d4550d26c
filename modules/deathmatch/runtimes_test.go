package deathmatch_test

import "github.com/sparkhost/sparkhost/internal/runtimes"

func init() { runtimes.Register() }
