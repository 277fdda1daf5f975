package proc

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestResolveWindows(t *testing.T) {
	files := map[string]bool{
		`C:\Tools\tool.exe`:                true,
		`C:\Tools\both.com`:                true,
		`C:\Tools\both.exe`:                true,
		`C:\Program Files\nodejs\node.exe`: true,
		`C:\Program Files\nodejs\npx.cmd`:  true,
		`C:\Program Files\nodejs\npx.exe`:  false,
		`D:\late\npx.exe`:                  true,
		`C:\Tools\run.bat`:                 true,
		`C:\Tools\script.vbs`:              true,
		`C:\Tools\noext`:                   true,
		`C:\Windows\System32\cmd.exe`:      true,
		`C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`: true,
		`\\server\share\bin\remote.exe`:                             true,
		`C:\Tools\lower.EXE`:                                        true,
	}
	isFile := func(p string) bool { return files[p] }
	path := `relative\dir;;"C:\Program Files\nodejs";C:\Tools;D:\late`
	cases := []struct {
		cmd, pathext, want, reason string
	}{
		{"tool", "", `C:\Tools\tool.exe`, ""},
		{"TOOL", "", "", ReasonCommandNotFound}, // the fake file system is case-sensitive; Windows' is not, and the kernel decides
		{"tool.exe", "", `C:\Tools\tool.exe`, ""},
		{"both", "", `C:\Tools\both.com`, ""}, // PATHEXT order: .COM before .EXE
		{"both", ".EXE;.COM", `C:\Tools\both.exe`, ""},
		{"node", "", `C:\Program Files\nodejs\node.exe`, ""},
		{"npx", "", "", ReasonCommandBatch}, // the first match in PATH order is npx.cmd
		{"npx.exe", "", `D:\late\npx.exe`, ""},
		{"run", "", "", ReasonCommandBatch},
		{"script", ".VBS;.EXE", "", ReasonCommandNotProgram},
		{"missing", "", "", ReasonCommandNotFound},
		{`C:\Tools\tool.exe`, "", `C:\Tools\tool.exe`, ""},
		{`c:/Tools/./sub/../tool.exe`, "", `C:\Tools\tool.exe`, ""},
		{`C:\Tools\lower.EXE`, "", `C:\Tools\lower.EXE`, ""},
		{`\\server\share\bin\remote.exe`, "", `\\server\share\bin\remote.exe`, ""},
		{`C:\Tools\run.bat`, "", "", ReasonCommandBatch},
		{`C:\Tools\run.bat.`, "", "", ReasonCommandBatch},
		{`C:\Tools\run.BAT `, "", "", ReasonCommandInvalid}, // padded
		{`C:\Tools\tool.exe.`, "", "", ReasonCommandNotProgram},
		{`C:\Tools\noext`, "", "", ReasonCommandNotProgram},
		{`C:\Tools\missing.exe`, "", "", ReasonCommandNotFound},
		{`C:\Tools\tool.exe:stream`, "", "", ReasonCommandInvalid},
		{"cmd", "", "", ReasonCommandShell},
		{"CMD.EXE", "", "", ReasonCommandShell},
		{"powershell", "", "", ReasonCommandShell},
		{"pwsh.exe", "", "", ReasonCommandShell},
		{"wscript", "", "", ReasonCommandShell},
		{`C:\Windows\System32\cmd.exe`, "", "", ReasonCommandShell},
		{`C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`, "", "", ReasonCommandShell},
		{`.\tool.exe`, "", "", ReasonCommandInvalid},
		{`Tools\tool.exe`, "", "", ReasonCommandInvalid},
		{`C:tool.exe`, "", "", ReasonCommandInvalid},
		{`\Tools\tool.exe`, "", "", ReasonCommandInvalid},
		{`\\?\C:\Tools\tool.exe`, "", "", ReasonCommandInvalid},
		{`\\.\pipe\x`, "", "", ReasonCommandInvalid},
		{"..", "", "", ReasonCommandInvalid},
		{"", "", "", ReasonCommandInvalid},
		{" tool", "", "", ReasonCommandInvalid},
		{"to*l", "", "", ReasonCommandInvalid},
		{`to"ol`, "", "", ReasonCommandInvalid},
		{"tool\x00", "", "", ReasonCommandInvalid},
	}
	for _, c := range cases {
		got, err := resolveWindows(c.cmd, path, c.pathext, isFile)
		if c.reason != "" {
			var ce *CommandError
			if !errors.As(err, &ce) || ce.Reason != c.reason {
				t.Errorf("resolveWindows(%q, %q) = %q, %v; want reason %s", c.cmd, c.pathext, got, err, c.reason)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, c.reason) || !strings.Contains(msg, ":") {
				t.Errorf("error for %q does not say what and how to fix: %q", c.cmd, msg)
			}
			if c.reason == ReasonCommandBatch && (ce.Resolved == "" || !strings.Contains(err.Error(), fmt.Sprintf("%q", ce.Resolved))) {
				t.Errorf("batch refusal for %q does not name the file: %v", c.cmd, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("resolveWindows(%q, %q) = %q, %v; want %q", c.cmd, c.pathext, got, err, c.want)
		}
	}
}

func TestParsePathext(t *testing.T) {
	cases := map[string][]string{
		"": {".com", ".exe", ".bat", ".cmd"},
		".COM;.EXE;.BAT;.CMD;.VBS;.VBE;.JS;.JSE;.WSF;.WSH;.MSC": {".com", ".exe", ".bat", ".cmd", ".vbs", ".vbe", ".js", ".jse", ".wsf", ".wsh", ".msc"},
		" .exe ; ;EXE;.;.a.b;.EXE;.py":                          {".exe", ".py"},
		";;;":                                                   {".com", ".exe", ".bat", ".cmd"},
	}
	for in, want := range cases {
		if got := parsePathext(in); !slices.Equal(got, want) {
			t.Errorf("parsePathext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitWindowsPathList(t *testing.T) {
	got := splitWindowsPathList(`C:\a;"C:\b;c";;D:\d`)
	want := []string{`C:\a`, `C:\b;c`, ``, `D:\d`}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestWindowsCommandLine(t *testing.T) {
	cases := []struct {
		argv []string
		want string
	}{
		{[]string{"node", "server.js"}, `node server.js`},
		{[]string{`C:\Program Files\nodejs\node.exe`, "a b"}, `"C:\Program Files\nodejs\node.exe" "a b"`},
		{[]string{"x", ""}, `x ""`},
		{[]string{"x", `a"b`}, `x "a\"b"`},
		{[]string{"x", `a\b`}, `x a\b`},
		{[]string{"x", `a\\b c`}, `x "a\\b c"`},
		{[]string{"x", `dir\`}, `x dir\`},
		{[]string{"x", `dir\ x\`}, `x "dir\ x\\"`},
		{[]string{"x", `\"`}, `x "\\\""`},
		{[]string{"x", "tab\there"}, "x \"tab\there\""},
		{[]string{"x", "%PATH%", "&", "|", "^"}, `x %PATH% & | ^`},
	}
	for _, c := range cases {
		got, err := windowsCommandLine(c.argv)
		if err != nil || got != c.want {
			t.Errorf("windowsCommandLine(%q) = %q, %v; want %q", c.argv, got, err, c.want)
		}
		if back := splitWindowsCommandLine(got); !slices.Equal(back, c.argv) {
			t.Errorf("split(%q) = %q, want %q", got, back, c.argv)
		}
	}
	for _, bad := range [][]string{nil, {`a"b`, "x"}, {"x", "a\x00b"}, {"x", strings.Repeat("a", maxWindowsCommandLine)}} {
		if got, err := windowsCommandLine(bad); err == nil {
			t.Errorf("windowsCommandLine(%.40q) = %.40q, want an error", bad, got)
		}
	}
}

// FuzzWindowsCommandLine: whatever the arguments, the command line
// splits back into exactly them (or is refused with an error).
func FuzzWindowsCommandLine(f *testing.F) {
	f.Add("node", `a "b" c`, `\\`, "")
	f.Add(`C:\x y\z.exe`, `\"`, "\t", `x\`)
	f.Fuzz(func(t *testing.T, a0, a1, a2, a3 string) {
		argv := []string{a0, a1, a2, a3}
		line, err := windowsCommandLine(argv)
		if err != nil {
			return
		}
		if back := splitWindowsCommandLine(line); !slices.Equal(back, argv) {
			t.Fatalf("argv %q -> %q -> %q", argv, line, back)
		}
	})
}

func TestWindowsEnvBlock(t *testing.T) {
	block, err := windowsEnvBlock([]string{"b=2", "Path=C:\\old", "A=1", "PATH=C:\\new", "=bad", "noequals", "Ü=ü"})
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for _, e := range strings.Split(string(utf16.Decode(block)), "\x00") {
		entries = append(entries, e)
	}
	want := []string{"A=1", "b=2", `PATH=C:\new`, "Ü=ü", "", ""}
	if !slices.Equal(entries, want) {
		t.Fatalf("block entries = %q, want %q", entries, want)
	}
	if _, err := windowsEnvBlock([]string{"A=x\x00y"}); err == nil {
		t.Fatal("NUL in a value accepted")
	}
	if b, _ := windowsEnvBlock(nil); !slices.Equal(b, []uint16{0, 0}) {
		t.Fatalf("empty block = %v", b)
	}
}

func TestMemberCounts(t *testing.T) {
	cases := []struct {
		pid, pgrp int
		zombie    bool
		want      bool
	}{
		{200, 100, false, true},
		{200, 100, true, false},  // zombie: runs nothing
		{100, 100, false, false}, // the leader, skipped
		{300, 100, false, false}, // the watchdog, skipped
		{200, 101, false, false}, // another group
		{0, 100, false, false},
	}
	for _, c := range cases {
		if got := memberCounts(100, []int{100, 300}, c.pid, c.pgrp, c.zombie); got != c.want {
			t.Errorf("memberCounts(pid %d, pgrp %d, zombie %v) = %v", c.pid, c.pgrp, c.zombie, got)
		}
	}
}
