//go:build linux || darwin || windows

package proc

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBuildEnv(t *testing.T) {
	parent := []string{
		"PATH=/usr/bin", "HOME=/home/u", "USER=u", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC",
		"TMPDIR=/tmp", "TERM=xterm", "XDG_CONFIG_HOME=/x", "LC_=bad-no-suffix",
		"AWS_SECRET_ACCESS_KEY=s3cr3t", "LD_PRELOAD=/evil.so", "SSH_AUTH_SOCK=/sock", "NODE_OPTIONS=--require x",
		"noequals", "=empty",
	}
	cases := []struct {
		name     string
		declared map[string]string
		pass     []string
		want     []string // exact result
		reason   string   // refusal reason instead
		errName  string
	}{
		{name: "safe list only", want: []string{"HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "PATH=/usr/bin", "TERM=xterm", "TMPDIR=/tmp", "TZ=UTC", "USER=u", "XDG_CONFIG_HOME=/x"}},
		{name: "declared overrides and adds", declared: map[string]string{"PATH": "/opt/bin", "TOKEN": "t"}, pass: []string{"SSH_AUTH_SOCK", "ABSENT"},
			want: []string{"HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "PATH=/opt/bin", "SSH_AUTH_SOCK=/sock", "TERM=xterm", "TMPDIR=/tmp", "TOKEN=t", "TZ=UTC", "USER=u", "XDG_CONFIG_HOME=/x"}},
		{name: "declared LD_PRELOAD", declared: map[string]string{"LD_PRELOAD": "x"}, reason: ReasonEnvDeniedLoader, errName: "LD_PRELOAD"},
		{name: "declared LD_AUDIT", declared: map[string]string{"LD_AUDIT": "x"}, reason: ReasonEnvDeniedLoader, errName: "LD_AUDIT"},
		{name: "declared LD_LIBRARY_PATH", declared: map[string]string{"LD_LIBRARY_PATH": "x"}, reason: ReasonEnvDeniedLoader, errName: "LD_LIBRARY_PATH"},
		{name: "declared DYLD_", declared: map[string]string{"DYLD_INSERT_LIBRARIES": "x"}, reason: ReasonEnvDeniedLoader, errName: "DYLD_INSERT_LIBRARIES"},
		{name: "lower-case ld_preload", declared: map[string]string{"ld_preload": "x"}, reason: ReasonEnvDeniedLoader, errName: "ld_preload"},
		{name: "NODE_OPTIONS", declared: map[string]string{"NODE_OPTIONS": "x"}, reason: ReasonEnvDeniedInterp, errName: "NODE_OPTIONS"},
		{name: "NODE_PATH", declared: map[string]string{"NODE_PATH": "x"}, reason: ReasonEnvDeniedInterp, errName: "NODE_PATH"},
		{name: "PYTHONPATH", declared: map[string]string{"PYTHONPATH": "x"}, reason: ReasonEnvDeniedInterp, errName: "PYTHONPATH"},
		{name: "PYTHONHOME", declared: map[string]string{"PYTHONHOME": "x"}, reason: ReasonEnvDeniedInterp, errName: "PYTHONHOME"},
		{name: "BUN_", declared: map[string]string{"BUN_CONFIG_REGISTRY": "x"}, reason: ReasonEnvDeniedInterp, errName: "BUN_CONFIG_REGISTRY"},
		{name: "npm_config lower", declared: map[string]string{"npm_config_registry": "x"}, reason: ReasonEnvDeniedInterp, errName: "npm_config_registry"},
		{name: "NPM_CONFIG upper", declared: map[string]string{"NPM_CONFIG_USERCONFIG": "x"}, reason: ReasonEnvDeniedInterp, errName: "NPM_CONFIG_USERCONFIG"},
		{name: "Npm_Config mixed", declared: map[string]string{"Npm_Config_x": "x"}, reason: ReasonEnvDeniedInterp, errName: "Npm_Config_x"},
		{name: "UV_", declared: map[string]string{"UV_INDEX_URL": "x"}, reason: ReasonEnvDeniedInterp, errName: "UV_INDEX_URL"},
		{name: "PERL5OPT", declared: map[string]string{"PERL5OPT": "x"}, reason: ReasonEnvDeniedInterp, errName: "PERL5OPT"},
		{name: "RUBYOPT", declared: map[string]string{"RUBYOPT": "x"}, reason: ReasonEnvDeniedInterp, errName: "RUBYOPT"},
		{name: "BASH_ENV", declared: map[string]string{"BASH_ENV": "x"}, reason: ReasonEnvDeniedShell, errName: "BASH_ENV"},
		{name: "ENV", declared: map[string]string{"ENV": "x"}, reason: ReasonEnvDeniedShell, errName: "ENV"},
		{name: "BASH_FUNC", declared: map[string]string{"BASH_FUNC_x%%": "x"}, reason: ReasonEnvInvalidName, errName: "BASH_FUNC_x%%"},
		{name: "internal", declared: map[string]string{"SLUICE_PROC_WATCHDOG": "1"}, reason: ReasonEnvDeniedInternal, errName: "SLUICE_PROC_WATCHDOG"},
		{name: "passEnv denied", pass: []string{"LD_PRELOAD"}, reason: ReasonEnvDeniedLoader, errName: "LD_PRELOAD"},
		{name: "passEnv interp", pass: []string{"NODE_OPTIONS"}, reason: ReasonEnvDeniedInterp, errName: "NODE_OPTIONS"},
		{name: "invalid name =", declared: map[string]string{"A=B": "x"}, reason: ReasonEnvInvalidName, errName: "A=B"},
		{name: "invalid name digit", declared: map[string]string{"1A": "x"}, reason: ReasonEnvInvalidName, errName: "1A"},
		{name: "invalid name empty", declared: map[string]string{"": "x"}, reason: ReasonEnvInvalidName, errName: ""},
		{name: "invalid passEnv", pass: []string{"A B"}, reason: ReasonEnvInvalidName, errName: "A B"},
		{name: "NUL value", declared: map[string]string{"A": "x\x00y"}, reason: ReasonEnvInvalidValue, errName: "A"},
		{name: "first refusal in sorted order", declared: map[string]string{"ZZ": "1", "NODE_OPTIONS": "x", "LD_PRELOAD": "y"}, reason: ReasonEnvDeniedLoader, errName: "LD_PRELOAD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := BuildEnv(c.declared, c.pass, parent)
			if c.reason != "" {
				var ee *EnvError
				if !errors.As(err, &ee) {
					t.Fatalf("err = %v, want *EnvError", err)
				}
				if ee.Reason != c.reason || ee.Name != c.errName {
					t.Fatalf("got %s/%q, want %s/%q", ee.Reason, ee.Name, c.reason, c.errName)
				}
				if !errors.Is(err, ErrEnvDenied) && !errors.Is(err, ErrEnvInvalid) {
					t.Fatalf("no sentinel: %v", err)
				}
				for _, v := range c.declared {
					if v != "" && strings.Contains(err.Error(), v) && len(v) > 1 {
						t.Fatalf("error text leaks a value: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestParseAllowList(t *testing.T) {
	cases := []struct {
		csv      string
		names    []string
		warnings int
	}{
		{"", nil, 0},
		{"npx, UVX ,node,,npx", []string{"node", "npx", "uvx"}, 0},
		{"*", nil, 1},
		{"npx,*,node*", []string{"npx"}, 2},
		{"/usr/bin/node,./x,bin\\y", nil, 3},
		{"a b,..,ok", []string{"ok"}, 2},
	}
	for _, c := range cases {
		a, w := ParseAllowList(c.csv)
		if !slices.Equal(a.Names(), c.names) || len(w) != c.warnings {
			t.Errorf("ParseAllowList(%q) = %q, %q", c.csv, a.Names(), w)
		}
	}
	a, _ := ParseAllowList("Node,npx")
	for cmd, want := range map[string]bool{"node": true, "NODE": true, "npx": true, "/usr/bin/node": true, "python": false, "*": false, "": false} {
		if a.Allows(cmd) != want {
			t.Errorf("Allows(%q) = %v", cmd, !want)
		}
	}
	var none *AllowList
	if !none.Allows("anything") {
		t.Error("nil list must allow")
	}
	star, _ := ParseAllowList("*")
	if star.Allows("node") {
		t.Error("* must not allow anything")
	}
}

func TestTail(t *testing.T) {
	cases := []struct {
		max    int
		writes []string
		want   string
	}{
		{10, []string{"abc"}, "abc"},
		{10, []string{"abc", "defghij"}, "abcdefghij"},
		{10, []string{"abc", "defghijk"}, "…bcdefghijk"},
		{4, []string{"0123456789"}, "…6789"},
		{4, []string{"ab", "cd", "ef", "g"}, "…defg"},
		{5, []string{"xx", "é✓"}, "…é✓"},        // cut inside "x", keeps whole runes
		{4, []string{"aé✓"}, "…✓"},              // a cut rune at the front is dropped
		{8, []string{"ok\xff\xfe"}, "ok\uFFFD"}, // invalid bytes become U+FFFD
	}
	for _, c := range cases {
		tl := newTail(c.max)
		for _, w := range c.writes {
			tl.Write([]byte(w))
		}
		got := tl.String()
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("tail(%d, %q) = %q, want %q", c.max, c.writes, got, c.want)
		}
	}
}

func TestParseStat(t *testing.T) {
	line := "123 (we ird) (name)) S 1 456 456 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 3 0 1 1 1\n"
	st, ok := parseStat([]byte(line))
	if !ok || st.state != 'S' || st.pgrp != 456 || st.threads != 3 {
		t.Fatalf("parseStat = %+v, %v", st, ok)
	}
	z, ok := parseStat([]byte("9 (x) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0"))
	if !ok || !z.dead() {
		t.Fatalf("zombie = %+v, %v", z, ok)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1", "1 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18"} {
		if _, ok := parseStat([]byte(bad)); ok {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

func TestAllowListFromEnv(t *testing.T) {
	t.Setenv(AllowCommandsEnv, " ")
	if a, w := AllowListFromEnv(); a != nil || w != nil {
		t.Fatalf("blank: %v %v", a, w)
	}
	t.Setenv(AllowCommandsEnv, "npx,*")
	a, w := AllowListFromEnv()
	if a == nil || !a.Allows("NPX") || a.Allows("node") || len(w) != 1 {
		t.Fatalf("got %v %q", a.Names(), w)
	}
}

// TestSetNonDumpable runs SetNonDumpable in a child (it is process-wide
// and would change how the rest of these tests see /proc) and checks the
// kernel's answer there.
func TestSetNonDumpable(t *testing.T) {
	p := mustStart(t, childSpec(t, "nondump"))
	got := readLine(t, p.Stdout())
	want := "ok"
	if runtime.GOOS == "linux" {
		want = "dumpable=0"
	}
	if got != want {
		t.Fatalf("child reported %q, want %q", got, want)
	}
	if out := p.Close(); !out.Complete {
		t.Fatalf("outcome = %+v", out)
	}
}
