package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestGlobalFlags(t *testing.T) {
	cases := []struct {
		args            []string
		rest            string
		color, progress string
		err             string
	}{
		{[]string{"servers"}, "servers", "auto", "auto", ""},
		{[]string{"--color=never", "review", "fx"}, "review fx", "never", "auto", ""},
		{[]string{"review", "fx", "--color=always", "--progress=never"}, "review fx", "always", "never", ""},
		{[]string{"refresh", "--color", "--progress"}, "refresh", "always", "always", ""},
		{[]string{"refresh", "--no-color", "--no-progress"}, "refresh", "never", "never", ""},
		{[]string{"add", "fx", "--", "ls", "--color=always"}, "add fx -- ls --color=always", "auto", "auto", ""},
		{[]string{"servers", "-color=never"}, "servers", "never", "auto", ""},
		{[]string{"servers", "--color=sometimes"}, "", "", "", `--color="sometimes": want auto, always or never`},
		{[]string{"servers", "--progress=yes"}, "", "", "", `--progress="yes": want auto, always or never`},
		{[]string{"find", "--colorful"}, "find --colorful", "auto", "auto", ""},
	}
	for _, c := range cases {
		rest, color, progress, err := globalFlags(c.args)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%v: error %v, want %s", c.args, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(rest, " ") != c.rest || color != c.color || progress != c.progress {
			t.Errorf("%v: %q %s %s %v, want %q %s %s", c.args, rest, color, progress, err, c.rest, c.color, c.progress)
		}
	}
	if r := sluice(t, "", "--color=maybe", "version"); r.code != exitUsage || !strings.Contains(r.stderr, "want auto, always or never") {
		t.Errorf("a bad --color: %s", r)
	}
}

// TestColorOn: the flag beats the environment, NO_COLOR beats a terminal
// and the force variables, TERM=dumb and a non-terminal get none.
func TestColorOn(t *testing.T) {
	defer func(f func(any) bool, g func(string) string) { isTerminal, getenv = f, g }(isTerminal, getenv)
	cases := []struct {
		mode string
		env  map[string]string
		term bool
		want bool
	}{
		{"auto", nil, true, true},
		{"auto", nil, false, false},
		{"auto", map[string]string{"NO_COLOR": "1"}, true, false},
		{"auto", map[string]string{"NO_COLOR": ""}, true, true}, // empty is unset (no-color.org)
		{"auto", map[string]string{"TERM": "dumb"}, true, false},
		{"auto", map[string]string{"TERM": "xterm-256color"}, true, true},
		{"auto", map[string]string{"CLICOLOR_FORCE": "1"}, false, true},
		{"auto", map[string]string{"FORCE_COLOR": "1"}, false, true},
		{"auto", map[string]string{"FORCE_COLOR": "0"}, false, false},
		{"auto", map[string]string{"NO_COLOR": "1", "FORCE_COLOR": "1"}, false, false},
		{"always", map[string]string{"NO_COLOR": "1"}, false, true},
		{"always", map[string]string{"TERM": "dumb"}, false, true},
		{"never", nil, true, false},
		{"never", map[string]string{"FORCE_COLOR": "1"}, true, false},
	}
	for _, c := range cases {
		term := c.term
		isTerminal = func(any) bool { return term }
		env := c.env
		getenv = func(k string) string { return env[k] }
		if got := colorOn(c.mode, nil); got != c.want {
			t.Errorf("mode %s, env %v, terminal %v: colour %v, want %v", c.mode, c.env, c.term, got, c.want)
		}
	}
}

var sgrRe = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestStyledTable: without colour it is table's output byte for byte; with
// colour, the same once the styles are taken out, and text a server wrote
// stays escaped.
func TestStyledTable(t *testing.T) {
	rows := [][]string{{"ID", "TRUST", "NOTE"}, {"fx", "trusted", "ok"}, {"långname", "untrusted", ""}, {"e", "stale", "bad \x1b[2J"}}
	var flat []string
	for _, r := range rows {
		flat = append(flat, strings.Join(r, "\t"))
	}
	var want, plain, colored bytes.Buffer
	table(escapingWriter{w: &want}, flat)
	style := func(row, col int, cell string) string {
		if col == 1 && row > 0 {
			return trustStyle(cell)
		}
		return ""
	}
	styledTable(escapingWriter{w: &plain}, rows, style)
	if plain.String() != want.String() {
		t.Fatalf("without colour:\n%q\nwant (table):\n%q", plain.String(), want.String())
	}
	styledTable(escapingWriter{w: &colored, color: true}, rows, style)
	c := colored.String()
	if !strings.Contains(c, "\x1b[32mtrusted\x1b[0m") || !strings.Contains(c, "\x1b[31muntrusted\x1b[0m") || !strings.Contains(c, "\x1b[33mstale\x1b[0m") {
		t.Errorf("the trust words are not coloured:\n%q", c)
	}
	if sgrRe.ReplaceAllString(c, "") != want.String() {
		t.Errorf("with colour, the text differs:\n%q\nwant:\n%q", sgrRe.ReplaceAllString(c, ""), want.String())
	}
	if strings.Contains(c, "\x1b[2J") {
		t.Errorf("a cell's escape sequence reached the terminal raw:\n%q", c)
	}
	// JSON output never takes colour.
	var j bytes.Buffer
	paint(escapingWriter{w: &j, json: true, color: true}, styleRed, "x")
	if j.String() != "x" {
		t.Errorf("JSON painted: %q", j.String())
	}
}

func TestDiffStyle(t *testing.T) {
	for l, want := range map[string]string{
		"changed  search":      styleBold,
		"  description:":       styleCyan,
		"      Search the web": "",
		"    - old":            styleRed,
		"    + new":            styleGreen,
		"":                     "",
	} {
		if got := diffStyle(l); got != want {
			t.Errorf("%q: %q, want %q", l, got, want)
		}
	}
}
