package client

import (
	"bytes"
	"testing"
)

func TestClientPromptRedrawnAroundEvents(t *testing.T) {
	var out bytes.Buffer
	c := NewConsole(Config{Out: &out})
	defer c.Close()
	c.prompt()
	c.Printf("chat bob: hi")
	c.promptAnswered()
	c.println("said: yo")
	c.prompt()
	c.endPrompt()
	want := "> \r\x1b[Kchat bob: hi\n> said: yo\n> \n"
	if got := out.String(); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}
