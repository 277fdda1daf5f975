package main

import (
	"strings"
	"testing"
)

// TestCLIToolCredentialsStayHidden: a literal credential in a cli tool's
// argv template is hidden where the template is shown (servers --json,
// describe, find, and the description the agent lists), and where the
// program repeats it on stderr in a failed run's result to the agent;
// the template stays readable.
func TestCLIToolCredentialsStayHidden(t *testing.T) {
	w := newWorld(t)
	const secret = "abc123secretvalue"
	w.writeUser(`approve: ["api__*"]
servers:
  api:
    cli:
      tools:
        get:
          argv: [ls, "Authorization: Bearer ` + secret + `", "{path}"]
          input:
            path: {type: string, default: /nonexistent-dir}
          annotations: {readOnlyHint: true}
`)
	outs := map[string]string{}
	r := sluiceProc(t, "", "servers", "--json")
	want(t, r, exitOK, `Authorization: Bearer (hidden) {path}`)
	outs["servers --json"] = r.stdout + r.stderr
	r = sluiceProc(t, "", "describe", "api__get")
	want(t, r, exitOK, "Runs ls Authorization: Bearer (hidden) {path}.")
	outs["describe"] = r.stdout + r.stderr
	r = sluiceProc(t, "", "find", "ls")
	outs["find"] = r.stdout + r.stderr
	stdout, stderr := serveLog(t, []string{"--mode", "flat"}, []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"api__get","arguments":{}}}`,
	})
	if !strings.Contains(stdout, "Runs ls Authorization: Bearer (hidden) {path}.") || !strings.Contains(stdout, "cannot access") {
		t.Fatalf("serve lists no masked description or the call did not fail in ls:\n%s\n%s", stdout, stderr)
	}
	outs["serve"], outs["serve log"] = stdout, stderr
	for where, out := range outs {
		if strings.Contains(out, secret) {
			t.Errorf("%s shows the credential:\n%s", where, out)
		}
	}
}

// TestCLIToolCredentialHiddenInRemoveDiff: the lines 'sluice remove'
// prints of a cli server hide a literal credential of its argv template
// as the listings do, however the template writes it (a flow list with
// an optional group, a block list, {{ }} for a brace), and keep the rest
// readable.
func TestCLIToolCredentialHiddenInRemoveDiff(t *testing.T) {
	w := newWorld(t)
	const secret = "abc123secretvalue"
	w.writeUser(`servers:
  api:
    cli:
      tools:
        get:
          argv: [ls, ["{dir}", "Authorization: Bearer ` + secret + `"], "{path}"]
          input:
            path: {type: string, default: /nonexistent-dir}
            dir: {type: string}
        put:
          argv:
            - curl
            - '--token={{` + secret + `}}'
            - -v
`)
	r := sluiceProc(t, "", "remove", "api")
	want(t, r, exitOK, `argv: [ls, ["{dir}", Authorization: Bearer (hidden)], "{path}"]`, `- --token=(hidden)`, `- -v`)
	if out := r.stdout + r.stderr; strings.Contains(out, secret) {
		t.Errorf("sluice remove shows the credential:\n%s", out)
	}
}
