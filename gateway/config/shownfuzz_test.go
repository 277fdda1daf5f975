package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// fuzzReadable is an ordinary value of the fuzzed server: every diff
// that shows its line shows it as it is.
const fuzzReadable = "readable-visible-1"

// FuzzDiffHidesSecret: a server declares a secret (an env or header
// value, an arg, a url's password, an oauth clientSecret or privateKey)
// written in a YAML style the fuzzer picks (plain, single or double
// quoted with escapes, a literal or folded block, over several lines,
// in a flow collection, tagged, behind an anchor its field names by an
// alias, with comments, one of them repeating it, with CRLF or odd line
// breaks); removing the
// server, updating it or adding another reports a diff that never shows
// an 8-byte piece of the secret, decoded or as the file writes it, and
// shows an ordinary value of it as it is.
func FuzzDiffHidesSecret(f *testing.F) {
	seeds := []struct {
		secret       string
		style, field uint8
		op, lines    uint8
	}{
		{"plainsecretvalue1", 0, 0, 0, 0},
		{"it's-a-s3cret-value", 1, 0, 0, 0},
		{"pa\"ss\\word-s3cret\t1", 2, 0, 0, 0},
		{"line-one-s3cret\nline-two-more", 3, 0, 0, 0},
		{"folded s3cret value with words", 4, 0, 0, 0},
		{"two words s3cret-split-here", 5, 1, 0, 0},
		{"flow-plain-s3cret", 6, 1, 0, 0},
		{"anchored-s3cret-val", 7, 1, 0, 0},
		{"tagged-s3cret-value", 8, 0, 0, 0},
		{"commented-s3cret-v", 9, 0, 0, 0},
		{"hunter2hunter2hunter", 0, 2, 1, 1},
		{"Bearer-s3cret-token-x", 2, 3, 0, 0},
		{"urlpassw0rd-s3cret", 0, 4, 0, 0},
		{"client-secret-s3cret", 1, 5, 0, 0},
		{"-----BEGIN KEY-----\nMIIEvQIBADANBgkq\n-----END KEY-----", 3, 6, 0, 0},
		{"update-env-s3cret-x", 2, 0, 2, 0},
		{"added-s3cret-value-with'quote\"", 0, 0, 3, 0},
		{"odd-break-s3cret-val", 1, 0, 0, 2},
		{"crlf-s3cret-value-xx", 3, 1, 1, 1},
		{"über-ünïcödé-s3cret", 2, 0, 0, 0},
		{"escaped \x01 control s3cret", 2, 2, 0, 0},
		{"flow map s3cret value", 2, 0, 0, 4},
		{"header-flow-s3cret-x", 1, 3, 1, 5},
		{"own-anchor-s3cret-v", 10, 0, 0, 0},
		{"double folded s3cret over lines", 13, 0x30, 0, 0},
		{"escaped-line-s3cret-long-value", 15, 2, 0, 0},
		{"single lines s3cret over", 14, 1, 0, 0},
		{"xs3cret/with/slash-and space", 0xf2, 0, 0, 0},
		{"commented-again-s3cret", 1, 0, 0, 8},
		{"commented-crlf-s3cret", 2, 3, 0, 9},
	}
	for _, s := range seeds {
		f.Add(s.secret, s.style, s.field, s.op, s.lines)
	}
	dir := f.TempDir()
	n := 0
	f.Fuzz(func(t *testing.T, secret string, style, field, op, lines uint8) {
		c, ok := newFuzzConfig(secret, style, field, lines)
		if !ok {
			return
		}
		n++
		file := filepath.Join(dir, fmt.Sprintf("mcp%d.yaml", n))
		defer os.Remove(file)
		if err := os.WriteFile(file, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if !c.decodes() {
			return // the style cannot write this secret as it is
		}
		tg := EditTarget{File: file, Scope: ScopeUser, Base: dir, Getenv: func(string) string { return "" }, Shown: c.mask()}
		var ch *Change
		var err error
		switch op % 4 {
		case 0:
			ch, err = RemoveServer(tg, "db")
		case 1:
			if c.remote {
				ch, err = UpdateServer(tg, "db", ServerSpec{URL: "https://other.example.com/mcp"})
			} else {
				ch, err = UpdateServer(tg, "db", ServerSpec{Args: []string{"--verbose"}, SetArgs: true})
			}
		case 2:
			if c.remote {
				ch, err = UpdateServer(tg, "db", ServerSpec{Command: "psql"})
			} else {
				ch, err = UpdateServer(tg, "db", ServerSpec{Env: []EnvVar{{"NEWKEY", "newvalue"}}})
			}
		case 3:
			ch, err = AddServer(tg, "added", ServerSpec{Command: "psql", Env: []EnvVar{{"TOKEN", c.secret}, {"OTHER", fuzzReadable}}})
		}
		if err != nil {
			return // refused: nothing is shown
		}
		c.check(t, ch.Diff, op%4)
	})
}

// fuzzConfig is a generated declaration file: its text, the secret it
// declares and how that is written.
type fuzzConfig struct {
	body    string
	public  string // body with the secret's text taken out
	secret  string // as decoded
	written string // as the file writes it (the scalar's text, no indicators)
	field   uint8
	remote  bool
	odd     bool
	plain   bool // written plain on one line
}

// Fields a secret is declared in.
const (
	fieldEnv = iota
	fieldArg
	fieldArgAlone
	fieldHeader
	fieldURL
	fieldClientSecret
	fieldPrivateKey
	fieldCount
)

const fuzzHole = "\x00HOLE\x00"

// newFuzzConfig writes secret in a server's field in the style picked;
// false when the secret is no use (too short, too long, not UTF-8).
func newFuzzConfig(secret string, style, field, lines uint8) (*fuzzConfig, bool) {
	if len(secret) < 8 || len(secret) > 120 || !utf8.ValidString(secret) || strings.ContainsAny(secret, "\x00\r\ufeff\u0085\u2028\u2029") {
		return nil, false
	}
	c := &fuzzConfig{secret: secret, field: field % fieldCount}
	if c.field == fieldURL {
		// a url's password: only the bytes a url writes as they are
		c.secret = strings.Map(func(r rune) rune {
			if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~!$&'*+,;=", r)) {
				return r
			}
			return 'x'
		}, c.secret)
	}
	value := c.secret
	prefix := ""
	switch c.field {
	case fieldHeader:
		prefix = "Bearer "
	case fieldURL:
		prefix = "https://user:"
	}
	suffix := ""
	if c.field == fieldURL {
		suffix = "@api.example.com/mcp"
	}
	full := prefix + value + suffix
	flowMap := lines&4 != 0 && (c.field == fieldEnv || c.field == fieldHeader)
	block := c.field != fieldArg && !flowMap // a block context for the value (a flow collection holds the args)
	tok, written, plain := writeScalar(full, prefix, suffix, style, block, "        ")
	if tok == "" {
		return nil, false
	}
	c.written, c.plain = written, plain
	var srv string
	switch c.field {
	case fieldEnv:
		srv = "    command: psql\n    env:\n      OTHER: " + fuzzReadable + "\n      # the token\n      TOKEN: " + fuzzHole + "\n      LAST: x\n"
		if flowMap {
			srv = "    command: psql\n    env: {OTHER: " + fuzzReadable + ", TOKEN: " + fuzzHole + ", LAST: x}\n"
		}
	case fieldArg:
		srv = "    command: psql\n    args: [é—ü, --password, " + fuzzHole + ", " + fuzzReadable + "]\n    env: {OTHER: " + fuzzReadable + "}\n"
	case fieldArgAlone:
		srv = "    command: psql\n    args:\n      - -v\n      - " + fuzzHole + "\n      - " + fuzzReadable + "\n"
	case fieldHeader:
		c.remote = true
		srv = "    url: https://api.example.com/mcp\n    headers:\n      X-Note: " + fuzzReadable + "\n      Authorization: " + fuzzHole + "\n"
		if flowMap {
			srv = "    url: https://api.example.com/mcp\n    headers: {X-Note: " + fuzzReadable + ",\n      Authorization: " + fuzzHole + "}\n"
		}
	case fieldURL:
		c.remote = true
		srv = "    url: " + fuzzHole + "\n    headers: {X-Note: " + fuzzReadable + "}\n"
	case fieldClientSecret, fieldPrivateKey:
		c.remote = true
		k := "clientSecret"
		if c.field == fieldPrivateKey {
			k = "privateKey"
		}
		srv = "    url: https://api.example.com/mcp\n    headers: {X-Note: " + fuzzReadable + "}\n    oauth:\n      clientId: app\n      " + k + ": " + fuzzHole + "\n"
	}
	if style%16 == 7 && c.field != fieldURL {
		// the secret written where an anchor is, the field naming it by an alias
		srv = "    expose: [&sec " + fuzzHole + "]\n" + strings.Replace(srv, fuzzHole, "*sec", 1)
	}
	tmpl := "# servers of this machine\nservers:\n  db:   # the one under test\n" + srv + "  keep:\n    command: psql\n    env: {KEEP: " + fuzzReadable + "}\n"
	switch lines % 4 {
	case 1:
		tmpl = strings.ReplaceAll(tmpl, "\n", "\r\n")
		tok = strings.ReplaceAll(tok, "\n", "\r\n")
	case 2:
		// a line break YAML counts and a diff does not, in another value
		tmpl = strings.Replace(tmpl, "{KEEP: "+fuzzReadable+"}", "{KEEP: "+fuzzReadable+", NOTE: \"a\u2028b\"}", 1)
		c.odd = true
	case 3:
		// a lone carriage return ends a line for YAML, not for a diff
		tmpl = strings.Replace(tmpl, "# servers of this machine\n", "# servers\rof this machine\n", 1)
		c.odd = true
	}
	c.body = strings.Replace(tmpl, fuzzHole, tok, 1)
	c.public = strings.Replace(tmpl, fuzzHole, "\x00", 1)
	if lines&8 != 0 && !strings.Contains(full, "\n") && (style%16 != 3 || style&0x10 == 0) {
		// a comment repeating the value as it is decoded (a kept block
		// ends in a line break a comment cannot repeat)
		nl := "\n"
		if lines%4 == 1 {
			nl = "\r\n"
		}
		c.body = strings.Replace(c.body, "# the one under test"+nl, "# the one under test"+nl+"    # was: "+full+nl, 1)
	}
	return c, true
}

// writeScalar writes s (prefix + secret + suffix) as a YAML scalar in a
// style picked by style, in a block context (block) or a flow one, the
// lines after the first indented by indent. It returns the token, the
// secret's part of it as written, and whether it is plain on one line;
// "" when the style cannot be used for s here.
func writeScalar(s, prefix, suffix string, style uint8, block bool, indent string) (tok, written string, plain bool) {
	secret := s[len(prefix) : len(s)-len(suffix)]
	switch style % 16 {
	case 0, 6, 9: // plain (9: a comment after it)
		tok, plain = s, true
		if strings.ContainsAny(s, "\n\t") || strings.Contains(s, ": ") || strings.Contains(s, " #") ||
			strings.HasSuffix(s, ":") || strings.HasSuffix(s, " ") || strings.ContainsRune("-?:,[]{}#&*!|>'\"%@` ", rune(s[0])) {
			return "", "", false
		}
		if !block && strings.ContainsAny(s, ",[]{}") {
			return "", "", false
		}
		written = secret
		if style%16 == 9 && block {
			tok += "   # rotated weekly"
		}
	case 1, 7, 10, 11: // single quoted (10: with an anchor of its own)
		if strings.ContainsAny(s, "\n") {
			return "", "", false
		}
		tok = "'" + strings.ReplaceAll(s, "'", "''") + "'"
		written = strings.ReplaceAll(secret, "'", "''")
		if style%16 == 10 {
			tok = "&own " + tok
		}
	case 13: // double quoted over lines: each space a line break
		if strings.Contains(s, "  ") || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
			return "", "", false
		}
		w := escapeDouble(secret, style&^0x80)
		tok = `"` + strings.ReplaceAll(escapeDouble(prefix, 0)+w+escapeDouble(suffix, 0), " ", "\n"+indent) + `"`
		written = strings.ReplaceAll(w, " ", "\n")
	case 2, 12: // double quoted, escaped by the style's bits
		w := escapeDouble(secret, style)
		tok = `"` + escapeDouble(prefix, 0) + w + escapeDouble(suffix, 0) + `"`
		written = w
	case 3: // literal block, kept or stripped
		if !block || strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\n") || strings.ContainsAny(s, "\t") {
			return "", "", false
		}
		head := "|-"
		if style&0x10 != 0 {
			head = "|"
		}
		tok = head + "\n" + indent + strings.ReplaceAll(s, "\n", "\n"+indent)
		written = secret
	case 4: // folded block: each space may be a line break
		if !block || strings.ContainsAny(s, "\n\t") || strings.HasPrefix(s, " ") || strings.Contains(s, "  ") || strings.HasSuffix(s, " ") {
			return "", "", false
		}
		tok = ">-\n" + indent + strings.ReplaceAll(s, " ", "\n"+indent)
		written = strings.ReplaceAll(secret, " ", "\n")
	case 5: // plain over several lines: each space a line break
		if strings.ContainsAny(s, "\n\t") || strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.Contains(s, "  ") ||
			strings.HasSuffix(s, ":") || strings.HasSuffix(s, " ") || strings.ContainsRune("-?:,[]{}#&*!|>'\"%@` ", rune(s[0])) ||
			!block && strings.ContainsAny(s, ",[]{}") {
			return "", "", false
		}
		tok = strings.ReplaceAll(s, " ", "\n"+indent)
		written = strings.ReplaceAll(secret, " ", "\n")
	case 8: // tagged, double quoted
		tok = `!!str "` + escapeDouble(s, 0) + `"`
		written = escapeDouble(secret, 0)
	case 14: // single quoted over lines: each space a line break
		if strings.ContainsAny(s, "\n") || strings.Contains(s, "  ") || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
			return "", "", false
		}
		q := strings.ReplaceAll(s, "'", "''")
		tok = "'" + strings.ReplaceAll(q, " ", "\n"+indent) + "'"
		written = strings.ReplaceAll(strings.ReplaceAll(secret, "'", "''"), " ", "\n")
	case 15: // double quoted over lines, escaped line breaks inside words
		w := escapeDouble(secret, style)
		var b strings.Builder
		for i, r := range w {
			if i > 0 && i%7 == 0 && r != '\\' && w[i-1] != '\\' {
				b.WriteString("\\\n" + indent)
			}
			b.WriteRune(r)
		}
		tok = `"` + escapeDouble(prefix, 0) + b.String() + escapeDouble(suffix, 0) + `"`
		written = strings.ReplaceAll(b.String(), "\\\n"+indent, "\n")
	}
	return tok, written, plain
}

// escapeDouble writes s for a double-quoted scalar: what must be escaped
// is, and the bits of style escape other characters (\x, \u, '/' and a
// space as "\ ").
func escapeDouble(s string, style uint8) string {
	var b strings.Builder
	for i, r := range s {
		pick := (int(style>>4) + i) % 4
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case style&0x10 != 0 && pick == 0 && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case style&0x20 != 0 && pick == 1:
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		case style&0x40 != 0 && r == '/':
			b.WriteString(`\x2F`)
		case style&0x80 != 0 && r == ' ':
			b.WriteString(`\ `)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// decodes tells whether the file declares the secret as meant (the
// style wrote it, and the value holding it is where the mask looks).
func (c *fuzzConfig) decodes() bool {
	var doc struct {
		Servers map[string]struct {
			Args    []string          `yaml:"args"`
			Env     map[string]string `yaml:"env"`
			Headers map[string]string `yaml:"headers"`
			URL     string            `yaml:"url"`
			OAuth   map[string]string `yaml:"oauth"`
		} `yaml:"servers"`
	}
	if yaml.Unmarshal([]byte(c.body), &doc) != nil {
		return false
	}
	s := doc.Servers["db"]
	var v string
	switch c.field {
	case fieldEnv:
		v = s.Env["TOKEN"]
	case fieldArg:
		if len(s.Args) == 4 {
			v = s.Args[2]
		}
	case fieldArgAlone:
		if len(s.Args) == 3 {
			v = s.Args[1]
		}
	case fieldHeader:
		v = s.Headers["Authorization"]
	case fieldURL:
		v = s.URL
	case fieldClientSecret:
		v = s.OAuth["clientSecret"]
	case fieldPrivateKey:
		v = s.OAuth["privateKey"]
	}
	return strings.Contains(v, c.secret)
}

// mask is a listing rule that hides every value holding the secret.
func (c *fuzzConfig) mask() *ShownMask {
	return &ShownMask{
		Value: func(_, v string) string {
			if strings.Contains(v, c.secret) {
				return hiddenPart
			}
			return v
		},
		Args: func(_ string, args []string) []string {
			out := make([]string, len(args))
			for i, a := range args {
				out[i] = a
				if strings.Contains(a, c.secret) {
					out[i] = hiddenPart
				}
			}
			return out
		},
		URL: func(u string) string {
			if strings.Contains(u, c.secret) {
				return "https://" + hiddenPart + "@api.example.com/mcp"
			}
			return u
		},
	}
}

var diffPrefix = regexp.MustCompile(`^[-+ ]\s*\d+  `)

// check: no 8-byte piece of the secret, decoded or as written, is in
// diff (but for one the file shows elsewhere), and the ordinary value is
// shown where its line is.
func (c *fuzzConfig) check(t *testing.T, diff string, op uint8) {
	t.Helper()
	var pieces []string
	add := func(s string) {
		for _, part := range strings.Split(s, "\n") {
			part = strings.TrimLeft(part, " \t")
			for i := 0; i+8 <= len(part); i++ {
				w := part[i : i+8]
				if strings.ContainsAny(w, "()") || strings.Contains(c.public, w) || strings.Contains(hiddenPart, w) {
					continue // the file or the marker shows it anyway
				}
				pieces = append(pieces, w)
			}
		}
	}
	add(c.secret)
	add(c.written)
	if op == 3 {
		add(scalar(c.secret))
	}
	for _, line := range strings.Split(diff, "\n") {
		line = diffPrefix.ReplaceAllString(line, "")
		for _, w := range pieces {
			if strings.Contains(line, w) {
				t.Fatalf("the diff shows %q of the secret %q (written %q):\n%s\nfile:\n%q", w, c.secret, c.written, diff, c.body)
			}
		}
	}
	if c.odd || strings.Contains(fuzzReadable, c.secret) {
		return
	}
	if strings.Contains(diff, "OTHER:") || strings.Contains(diff, "X-Note:") || op == 0 && c.field == fieldArgAlone {
		if !strings.Contains(diff, fuzzReadable) {
			t.Fatalf("the ordinary value is not shown:\n%s\nfile:\n%q", diff, c.body)
		}
	}
}
