package config

import (
	"sort"
	"strings"

	"sluice/gateway/clitool"
	"sluice/gateway/internal/linediff"
)

// ShownMask is how an edit's reported diff hides the literal credentials
// of the declarations it shows (the file keeps them as written): Value
// masks an env or header value by its name, Args a declaration's args
// (judged with its command), URL a remote server's url. The gateway
// supplies its listing rule, so a diff shows what 'sluice servers' shows.
//
// # Why mask the diff
//
// The output of 'sluice add' and 'sluice update' is often a script's log;
// a literal token given with --env or in args would be printed there
// while every listing hides it.
type ShownMask struct {
	Value func(name, value string) string
	Args  func(command string, args []string) []string
	URL   func(url string) string
}

// lineMask returns the line rewrite for linediff: every literal value of
// the declarations in before and after that m hides is replaced by its
// masked form. A value is found by its YAML node, so the way it is written
// (quoted, escaped, a block scalar, over several lines) does not matter;
// then by text, for where a node does not reach (a comment repeating it,
// a line written elsewhere).
func (m *ShownMask) lineMask(t EditTarget, before, after []byte) func(string) string {
	type sub struct{ from, to string }
	var subs []sub
	add := func(from, to string) {
		if from == to || from == "" {
			return
		}
		if q := scalar(from); q != from {
			subs = append(subs, sub{q, to})
		}
		subs = append(subs, sub{from, to})
	}
	for _, data := range [][]byte{before, after} {
		if len(data) == 0 {
			continue
		}
		servers, _, _ := Parse(data, t.File, t.Scope, t.Base)
		for _, s := range servers {
			for k, v := range s.Env {
				add(v, m.Value(k, v))
			}
			for k, v := range s.Headers {
				add(v, m.Value(k, v))
			}
			shown := m.Args(s.Command, s.Args)
			for i, a := range s.Args {
				add(a, shown[i])
			}
			if s.URL != "" {
				add(s.URL, m.URL(s.URL))
			}
			if o := s.OAuth; o != nil {
				add(o.ClientSecret, m.oauthShown("clientSecret", o.ClientSecret))
				add(o.PrivateKey, m.oauthShown("privateKey", o.PrivateKey))
			}
			if s.CLI != nil {
				for _, tool := range s.CLI.Tools {
					texts := argvTexts(tool.Spec.Argv, nil)
					for i, shown := range m.argvShown(texts) {
						if shown != "" {
							lit, _ := clitool.Literal(texts[i])
							add(lit, shown)
							add(texts[i], shown)
						}
					}
				}
			}
		}
	}
	spans := map[string][]span{}
	for _, data := range [][]byte{before, after} {
		// what the nodes hide is looked for as text too: a value the
		// file does not load (an alias, a url with a password) is in no
		// server above, and a comment may repeat it
		m.nodeSpans(data, spans, add)
	}
	if len(subs) == 0 && len(spans) == 0 {
		return nil
	}
	sort.SliceStable(subs, func(i, j int) bool { return len(subs[i].from) > len(subs[j].from) })
	return func(line string) string {
		if sp, ok := spans[line]; ok {
			line = hideSpans(line, sp)
		}
		for _, s := range subs {
			line = replaceWord(line, s.from, s.to)
		}
		return line
	}
}

// argvShown is how the listings show a cli tool's argv template, given
// as its elements' texts (argv[0] first, groups flattened): for each
// literal element that m.Args hides (judged as the program gets it, {{
// read as {, with the whole command line), its masked form; "" for an
// element shown as written (argv[0], a literal not hidden, an element
// with a placeholder).
func (m *ShownMask) argvShown(texts []string) []string {
	out := make([]string, len(texts))
	if len(texts) < 2 {
		return out
	}
	vals := make([]string, len(texts))
	lit := make([]bool, len(texts))
	for i, t := range texts {
		if vals[i], lit[i] = clitool.Literal(t); !lit[i] {
			vals[i] = t
		}
	}
	shown := m.Args(vals[0], vals[1:])
	for i := 1; i < len(texts); i++ {
		if lit[i] && i-1 < len(shown) && shown[i-1] != vals[i] {
			out[i] = shown[i-1]
		}
	}
	return out
}

// argvTexts appends to out the texts of a template's elements in order,
// a group's in place.
func argvTexts(es []clitool.Elem, out []string) []string {
	for _, e := range es {
		if e.Group != nil {
			out = argvTexts(e.Group, out)
			continue
		}
		out = append(out, e.Text)
	}
	return out
}

// replaceWord replaces each occurrence of old in s that does not continue
// a word on either side (a value "abc" is not looked for inside "xabcx").
func replaceWord(s, old, repl string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := i + len(old)
		if (i > 0 && wordByte(s[i-1]) && wordByte(old[0])) || (j < len(s) && wordByte(s[j]) && wordByte(old[len(old)-1])) {
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(repl)
		s = s[j:]
	}
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Diff is the edit's line diff as reported: every line shown through
// LineMask(extra).
func (e *Edit) Diff(extra func(string) string) string {
	return linediff.Changed(e.Before, e.After, e.LineMask(extra))
}

// LineMask is how a line of the edit is shown: the target's Shown mask
// (when set) for the declarations before and after it, then extra (when
// not nil). nil when there is neither.
func (e *Edit) LineMask(extra func(string) string) func(string) string {
	var mask func(string) string
	if e.Target.Shown != nil {
		mask = e.Target.Shown.lineMask(e.Target, e.Before, e.After)
	}
	switch {
	case mask == nil:
		return extra
	case extra != nil:
		shown := mask
		return func(line string) string { return extra(shown(line)) }
	}
	return mask
}
