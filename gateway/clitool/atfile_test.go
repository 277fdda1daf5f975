package clitool

import (
	"errors"
	"strings"
	"testing"
)

// TestResponseFileValuesRefused: programs that expand "@FILE" into more
// arguments (gcc, javac, curl's data values...) must not get a
// model-chosen value that makes an element start with "@", "--" or not;
// other programs keep such values ("@me" for gh, "@scope/pkg" for npm),
// and allowDash or the declaration's own "@" text lets them through.
func TestResponseFileValuesRefused(t *testing.T) {
	spec := func(cmd string, allow bool, elems ...any) Spec {
		return Spec{Name: "t", Argv: argv(append([]any{cmd}, elems...)...), Input: []Param{
			{Name: "file", Type: TypeString, Required: true, AllowDash: allow},
		}}
	}
	arr := func(cmd string) Spec {
		return Spec{Name: "t", Argv: argv(cmd, "--", "{files...}"), Input: []Param{
			{Name: "files", Type: TypeArray, Required: true, Items: &Param{Type: TypeString}},
		}}
	}
	cases := []struct {
		name    string
		spec    Spec
		args    string
		refused bool
	}{
		{"gcc file", spec("gcc", false, "-c", "{file}"), `{"file": "@/home/u/.ssh/id_rsa"}`, true},
		{"gcc after --", spec("/usr/bin/gcc-13", false, "--", "{file}"), `{"file": "@x"}`, true},
		{"cross gcc", spec("x86_64-linux-gnu-gcc", false, "{file}"), `{"file": "@x"}`, true},
		{"javac", spec("javac.exe", false, "{file}"), `{"file": "@args"}`, true},
		{"curl data", spec("curl", false, "-d", "{file}", "https://api.example/x"), `{"file": "@/etc/passwd"}`, true},
		{"value after empty prefix", spec("clang", false, "{file}"), `{"file": "@x"}`, true},
		{"array item", arr("gcc"), `{"files": ["a.c", "@x"]}`, true},
		{"gcc plain", spec("gcc", false, "-c", "{file}"), `{"file": "a@b.c"}`, false},
		{"gcc value not first", spec("gcc", false, "-I{file}"), `{"file": "@x"}`, false},
		{"declaration's own @", spec("gcc", false, "@{file}"), `{"file": "rsp"}`, false},
		{"allowDash", spec("gcc", true, "{file}"), `{"file": "@x"}`, false},
		{"gh @me", spec("gh", false, "issue", "list", "--assignee", "{file}"), `{"file": "@me"}`, false},
		{"npm scope", spec("npm", false, "view", "{file}"), `{"file": "@types/node"}`, false},
		{"array for other program", arr("git"), `{"files": ["@x"]}`, false},
	}
	for _, tc := range cases {
		tool, err := Compile(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		argv, err := tool.Argv([]byte(tc.args))
		var ae *ArgError
		switch {
		case tc.refused && (!errors.As(err, &ae) || ae.Reason != ReasonAtFile || !strings.Contains(err.Error(), `"@"`)):
			t.Errorf("%s: argv %q, err %v; want a %s refusal", tc.name, argv, err, ReasonAtFile)
		case !tc.refused && err != nil:
			t.Errorf("%s: %v; want it rendered", tc.name, err)
		}
	}
}
