package deathmatch_test

import "github.com/sparkhost/sparkhost/runtimes"

func init() { runtimes.Register() }
