package client_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/client"
)

func TestClientSplitWords(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`say hi`, []string{"say", "hi"}},
		{"  say \t hi  there ", []string{"say", "hi", "there"}},
		{`wait "chat alice: hi" 5s`, []string{"wait", "chat alice: hi", "5s"}},
		{`wait 'a \(b\)'`, []string{"wait", `a \(b\)`}},
		{`say "a \"q\" \\ \n"`, []string{"say", `a "q" \ \n`}},
		{`say don\'t a\ b`, []string{"say", "don't", "a b"}},
		{`x "" ''`, []string{"x", "", ""}},
		{`pre"mid"'post'`, []string{"premidpost"}},
		{``, nil},
	} {
		got, err := client.SplitWords(tc.line)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitWords(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
	for _, bad := range []string{`say "hi`, `say 'hi`, `say "hi\"`} {
		if _, err := client.SplitWords(bad); err == nil {
			t.Errorf("SplitWords(%q) succeeded", bad)
		}
	}
}

func TestClientSplitScript(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{`connect 127.0.0.1:1 a; say hi;wait "x"`, []string{"connect 127.0.0.1:1 a", "say hi", `wait "x"`}},
		{`say "a; b"; say 'c;d'; say e\;f`, []string{`say "a; b"`, `say 'c;d'`, `say e\;f`}},
		{"say a\nsay b;;  ; ", []string{"say a", "say b"}},
		{`say "x\";y"`, []string{`say "x\";y"`}},
		{``, nil},
	} {
		got, err := client.SplitScript(tc.text)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitScript(%q) = %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
	if _, err := client.SplitScript(`say "a; b`); err == nil {
		t.Error("SplitScript with an unterminated quote succeeded")
	}
}

func TestClientRunInteractiveFromAPipe(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		code     int
		notWant  string
	}{
		{"end of input", "help\nstatus\n", 0, "error:"},
		{"quit", "status\nquit\nbogus\n", 0, "error:"},
		{"a failure stops the script", "status\nbogus\nhelp\n", 1, "list the commands"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConsole(t, client.Config{})
			if code := c.RunInteractive(context.Background(), strings.NewReader(tc.in)); code != tc.code {
				t.Errorf("exit code %d, want %d:\n%s", code, tc.code, c.out.String())
			}
			out := c.out.String()
			if strings.Contains(out, "> ") {
				t.Errorf("prompt printed for a pipe:\n%s", out)
			}
			if strings.Contains(out, tc.notWant) {
				t.Errorf("output has %q:\n%s", tc.notWant, out)
			}
		})
	}

	t.Run("context ends a sleep", func(t *testing.T) {
		c := newConsole(t, client.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int)
		go func() { done <- c.RunInteractive(ctx, strings.NewReader("sleep 1m\n")) }()
		untilBlocked(t, c.Console)
		cancel()
		if code := <-done; code != 1 || !strings.Contains(c.out.String(), "sleep: interrupted") {
			t.Errorf("interrupted script exit code %d, want 1 with sleep: interrupted:\n%s", code, c.out.String())
		}
	})
}
