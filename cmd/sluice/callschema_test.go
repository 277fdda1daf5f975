package main

import (
	"strings"
	"testing"
)

// KEY=VALUE values follow the tool's input schema: the fixture's echo
// takes text as a string, add takes numbers a and b.
func TestCallFitsKeyValueArgumentsToTheSchema(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))

	// The first call has no recorded catalog yet: the schema is listed.
	r := sluice(t, "", "call", "fx__echo", "text=100")
	want(t, r, exitOK, "100")
	r = sluice(t, "", "call", "fx__echo", "text=true", "--json")
	want(t, r, exitOK, `"text":"true"`)
	r = sluice(t, "", "call", "fx__echo", `text="007"`, "--json")
	want(t, r, exitOK, `"text":"007"`)
	// Numbers stay numbers where the schema wants them.
	want(t, sluice(t, "", "call", "fx__add", "a=1", "b=2"), exitOK, `"sum": 3`)

	// Plain text where the schema allows no string: exit 2, says how.
	r = sluice(t, "", "call", "fx__add", "a=x", "b=2")
	want(t, r, exitUsage, "argument a=x", "a is a number", "a=1.5", "--args")
	if r.stdout != "" {
		t.Fatalf("a refused call printed on stdout:\n%s", r)
	}
	// --args is sent as given: the server's own error, exit 3.
	r = sluice(t, "", "call", "fx__echo", "--args", `{"text":100}`)
	want(t, r, exitToolError, "text")
}

func TestCoerceArgs(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"s":{"type":"string"},"n":{"type":["integer","null"]},"o":{"type":["string","null"]},"any":{}}}`)
	as, err := parseKV([]string{"s=100", "n=null", "o=null", "any=5", "x=1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := coerceArgs(as, schema); err != nil {
		t.Fatal(err)
	}
	if got := string(kvObject(as)); got != `{"s":"100","n":null,"o":null,"any":5,"x":1}` {
		t.Fatalf("coerced = %s", got)
	}
	as, _ = parseKV([]string{"n=abc"})
	if err := coerceArgs(as, schema); err == nil || !strings.Contains(err.Error(), "n=42") {
		t.Fatalf("n=abc for an integer: %v", err)
	}
	as, _ = parseKV([]string{"s=100"})
	if err := coerceArgs(as, nil); err != nil || string(kvObject(as)) != `{"s":100}` {
		t.Fatalf("without a schema the value goes as typed: %s %v", kvObject(as), err)
	}
}
