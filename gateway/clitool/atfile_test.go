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
		{"gcc value after a glued option", spec("gcc", false, "-I{file}"), `{"file": "@x"}`, true},
		{"glued option allowDash", spec("gcc", true, "-I{file}"), `{"file": "@x"}`, false},
		{"gcc @ mid value", spec("gcc", false, "-DX={file}"), `{"file": "a@b"}`, false},
		// "@" inside an element where the program still reads a file.
		{"curl glued -d", spec("curl", false, "-d{file}", "https://api.example/x"), `{"file": "@/etc/passwd"}`, true},
		{"curl glued cluster -sd", spec("curl", false, "-s{file}"), `{"file": "d@/etc/passwd"}`, true},
		{"curl form name=@", spec("curl", false, "-F", "file={file}"), `{"file": "@/etc/passwd"}`, true},
		{"curl form name=<", spec("curl", false, "--form", "file={file}"), `{"file": "</etc/passwd"}`, true},
		{"curl form value", spec("curl", false, "-F", "{file}"), `{"file": "file=@/etc/passwd"}`, true},
		{"curl data-urlencode name@file", spec("curl", false, "--data-urlencode", "{file}"), `{"file": "name@/etc/passwd"}`, true},
		{"curl header file", spec("curl", false, "-H", "{file}"), `{"file": "@/etc/passwd"}`, true},
		{"curl write-out file", spec("curl", false, "-w", "x{file}"), `{"file": "@/etc/passwd"}`, true},
		{"curl url user", spec("curl", false, "https://api.example/u/{file}"), `{"file": "a@b.example"}`, false},
		{"curl -u user", spec("curl", false, "-u", "{file}", "https://api.example/"), `{"file": "me@example.org"}`, false},
		{"gcc -Wl,", spec("gcc", false, "-Wl,{file}"), `{"file": "@/etc/passwd"}`, true},
		{"gcc -Wl, later item", spec("gcc", false, "-Wl,{file}"), `{"file": "x.o,@/etc/passwd"}`, true},
		{"gcc -Wa,", spec("gcc", false, "-Wa,{file}"), `{"file": "@/etc/passwd"}`, true},
		{"key=@file", spec("gcc", false, "--param=x={file}"), `{"file": "@/etc/passwd"}`, true},
		{"javac -J", spec("javac", false, "-J{file}"), `{"file": "@/etc/passwd"}`, true},
		// Programs that read @FILE, under wrappers or newly listed.
		{"env gcc", spec("env", false, "-i", "CC=cc", "gcc", "{file}"), `{"file": "@x"}`, true},
		{"env -u", spec("/usr/bin/env", false, "-u", "HOME", "gcc", "{file}"), `{"file": "@x"}`, true},
		{"env -S", spec("env", false, "-S", "gcc -c", "{file}"), `{"file": "@x"}`, true},
		{"ccache gcc", spec("ccache", false, "gcc", "{file}"), `{"file": "@x"}`, true},
		{"sudo -u", spec("sudo", false, "-u", "root", "gcc", "{file}"), `{"file": "@x"}`, true},
		{"sudo unknown option", spec("sudo", false, "--other", "x", "javac", "{file}"), `{"file": "@x"}`, true},
		{"nice -n", spec("nice", false, "-n", "5", "gcc", "{file}"), `{"file": "@x"}`, true},
		{"time", spec("time", false, "-f", "%e", "ld", "{file}"), `{"file": "@x"}`, true},
		{"nohup", spec("nohup", false, "clang", "{file}"), `{"file": "@x"}`, true},
		{"stdbuf", spec("stdbuf", false, "-o", "L", "gcc", "{file}"), `{"file": "@x"}`, true},
		{"timeout curl", spec("timeout", false, "10", "curl", "-d{file}"), `{"file": "@/etc/passwd"}`, true},
		{"timeout -k", spec("timeout", false, "-k", "5s", "1m", "gcc", "{file}"), `{"file": "@x"}`, true},
		{"xargs", spec("xargs", false, "-n", "1", "gcc", "{file}"), `{"file": "@x"}`, true},
		{"command exec nice", spec("command", false, "exec", "nice", "gcc", "{file}"), `{"file": "@x"}`, true},
		{"wrapper after --", spec("sudo", false, "--", "gcc", "{file}"), `{"file": "@x"}`, true},
		{"wrapper in a group", spec("env", false, []any{"-i", "{file}"}, "gcc", "a.c"), `{"file": "@x"}`, true},
		{"swiftc", spec("swiftc", false, "{file}"), `{"file": "@x"}`, true},
		{"ghc", spec("ghc", false, "{file}"), `{"file": "@x"}`, true},
		{"nvcc", spec("nvcc", false, "{file}"), `{"file": "@x"}`, true},
		{"7z", spec("7z", false, "a", "out.7z", "{file}"), `{"file": "@x"}`, true},
		{"clang-tidy", spec("clang-tidy-17", false, "{file}"), `{"file": "@x"}`, true},
		{"env gh @me", spec("env", false, "GH_HOST=x", "gh", "issue", "list", "--assignee", "{file}"), `{"file": "@me"}`, false},
		{"nice git", spec("nice", false, "git", "log", "{file}"), `{"file": "@x"}`, false},
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
		case tc.refused && (!errors.As(err, &ae) || ae.Reason != ReasonAtFile || !strings.Contains(err.Error(), `argument "file`) || !strings.Contains(err.Error(), "allowDash: true")):
			t.Errorf("%s: argv %q, err %v; want a %s refusal", tc.name, argv, err, ReasonAtFile)
		case !tc.refused && err != nil:
			t.Errorf("%s: %v; want it rendered", tc.name, err)
		}
	}
}
