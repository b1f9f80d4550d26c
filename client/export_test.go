package client

// Blocked reports how many commands of c are blocked in a wait or a sleep.
func Blocked(c *Console) int32 { return c.blocked.Load() }
