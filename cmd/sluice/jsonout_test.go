package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oneJSONValue reports whether s is exactly one JSON value (surrounded
// by white space at most): what a script piping --json into a parser
// needs, with no log line or second value mixed in.
func oneJSONValue(s string) bool {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	var v json.RawMessage
	if dec.Decode(&v) != nil {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF
}

// TestEveryJSONOutputIsOneJSONValue: every command's --json prints one
// JSON value on stdout when it succeeds, and nothing on stdout when it
// fails (the error is on stderr), through the binary.
func TestEveryJSONOutputIsOneJSONValue(t *testing.T) {
	for in, want := range map[string]bool{"{}\n": true, " [1] ": true, "{}\n{}\n": false, "{} x": false, "": false, "log line\n{}": false} {
		if oneJSONValue(in) != want {
			t.Fatalf("oneJSONValue(%q) != %v", in, want)
		}
	}
	w := newWorld(t)
	t.Setenv("HOME", w.root)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	script := filepath.Join(w.root, "s.star")
	if err := os.WriteFile(script, []byte("r = fx.echo(text='hi')\nresult = {'n': 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(w.root, "in.txt")
	if err := os.WriteFile(input, []byte("some text"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := [][]string{
		{"servers", "--json"},
		{"check", "--json"},
		{"refresh", "--json"},
		{"find", "--json"},
		{"find", "echo", "--json"},
		{"describe", "fx__echo", "--json"},
		{"call", "fx__echo", "text=hi", "--json"},
		{"run", script, "--json"},
		{"review", "fx", "--json"},
		{"filter", "list", "--json"},
		{"filter", "test", "builtin:shape", "--input", input, "--json"},
	}
	for _, args := range ok {
		r := sluiceTimed(t, args...)
		if r.code != exitOK || !oneJSONValue(r.stdout) {
			t.Errorf("sluice %v: want exit 0 and one JSON value on stdout, got %s", args, r)
		}
	}
	// A tool that reports failure: exit 3, and its result is still the JSON.
	if r := sluiceTimed(t, "call", "fx__fail", "--yes", "--json"); r.code != exitToolError || !oneJSONValue(r.stdout) {
		t.Errorf("call of a failing tool with --json: want exit 3 and one JSON value on stdout, got %s", r)
	}
	bad := [][]string{
		{"servers", "--json", "extra"},
		{"check", "--json", "extra"},
		{"find", "--server", "nosuch", "--json"},
		{"describe", "fx__nosuch", "--json"},
		{"call", "fx__nosuch", "--json"},
		{"call", "nosuch__echo", "--json"},
		{"review", "nosuch", "--json"},
		{"result", "r-00000000000000000000000000000000", "--json"},
		{"import", filepath.Join(w.root, "nope.json"), "--json"},
		{"import", "--json"}, // no client file under HOME
		{"status", "--json"},
	}
	for _, args := range bad {
		r := sluiceTimed(t, args...)
		if r.code == exitOK || r.stdout != "" || r.stderr == "" {
			t.Errorf("sluice %v: want a failure with stdout empty and the error on stderr, got %s", args, r)
		}
	}
	// Declarations with errors: check's report is still the JSON, with
	// every diagnostic in it; exit 1 says there are errors.
	w.writeUser("servers:\n  a:\n    comand: x\n")
	r := sluiceTimed(t, "check", "--json")
	var rep struct {
		Errors      bool `json:"errors"`
		Diagnostics []struct {
			Severity, File, Field, Message, Fix string
			Line, Column                        int
		} `json:"diagnostics"`
		Summary struct{ Errors, Warnings, DeclarationFiles int } `json:"summary"`
	}
	if r.code != exitFailure || !oneJSONValue(r.stdout) || json.Unmarshal([]byte(r.stdout), &rep) != nil {
		t.Fatalf("check --json of a file with errors: want exit 1 and one JSON value on stdout, got %s", r)
	}
	if !rep.Errors || rep.Summary.Errors != len(rep.Diagnostics) || rep.Summary.Errors < 1 || rep.Summary.DeclarationFiles != 1 ||
		rep.Diagnostics[0].Field != "servers.a.comand" || rep.Diagnostics[0].Line != 3 || !strings.Contains(rep.Diagnostics[0].Fix, `"command"`) {
		t.Errorf("check --json of a file with errors: %+v\n%s", rep, r.stdout)
	}
}
