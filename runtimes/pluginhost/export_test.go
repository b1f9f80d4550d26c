package pluginhost

// AnswerIn reports whether the answer of m's Step call in flight has
// arrived and waits to be taken (tests: wait for it instead of guessing a
// sleep long enough for a busy machine). It does not take it.
func AnswerIn(m *Module) bool { return m.steps.inFlight && len(m.steps.answers) > 0 }
