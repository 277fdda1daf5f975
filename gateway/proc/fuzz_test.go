package proc

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParseAllowList(f *testing.F) {
	for _, s := range []string{"", "npx,uvx", "*", " Node , /bin/x ,a b,..", "\x00,\xff", strings.Repeat("a,", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, csv string) {
		a, _ := ParseAllowList(csv)
		for _, n := range a.Names() {
			if n == "" || strings.ContainsAny(n, "*?[/\\, ") || n != strings.ToLower(n) {
				t.Fatalf("accepted bad entry %q from %q", n, csv)
			}
			if !a.Allows(n) || !a.Allows(strings.ToUpper(n)) {
				t.Fatalf("entry %q not allowed", n)
			}
		}
		if a.Allows("*") || a.Allows("") {
			t.Fatal("wildcard or empty allowed")
		}
	})
}

func FuzzBuildEnv(f *testing.F) {
	f.Add("TOKEN", "v", "SSH_AUTH_SOCK", "PATH=/bin\x00LD_PRELOAD=x")
	f.Add("ld_preload", "x", "", "")
	f.Add("npm_config_x", "x", "NODE_OPTIONS", "A=B")
	f.Fuzz(func(t *testing.T, name, value, pass, parent string) {
		env, err := BuildEnv(map[string]string{name: value}, []string{pass}, strings.Split(parent, "\x00"))
		if err != nil {
			if strings.Contains(err.Error(), value) && len(value) > 3 && !strings.Contains(name+pass, value) {
				t.Fatalf("error leaks the value: %v", err)
			}
			return
		}
		for _, kv := range env {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || !validEnvName(k) || deniedReason(k) != "" {
				t.Fatalf("unsafe entry %q", kv)
			}
		}
	})
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("123 (a) S 1 456 456 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 3 0 1 1 1"))
	f.Add([]byte("1 ()) Z 0 1 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseStat(b)
	})
}

func FuzzTail(f *testing.F) {
	f.Add(7, []byte("héllo wörld ✓"), []byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, max int, a, b []byte) {
		if max <= 0 || max > 1<<16 {
			return
		}
		tl := newTail(max)
		tl.Write(a)
		tl.Write(b)
		s := tl.String()
		if !utf8.ValidString(s) {
			t.Fatalf("invalid UTF-8 %q", s)
		}
		if len(s) > max+len("…") {
			t.Fatalf("tail %d bytes for max %d", len(s), max)
		}
	})
}
