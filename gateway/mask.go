package gateway

import (
	"net/url"
	"strings"

	"sluice/gateway/clients"
	"sluice/gateway/internal/urlmask"
)

// Hidden is what a masked value is shown as.
const Hidden = "(hidden)"

// MaskValue hides a declared value that looks like a secret, by the rule
// 'sluice import' uses to decide which values it does not copy: by its
// name or by its shape. A value that holds ${env:NAME} references keeps
// them (they carry no value); only its literal parts are judged, by their
// shape. A URL keeps everything but its password.
func MaskValue(name, value string) string {
	if !strings.Contains(value, "${") {
		if clients.LooksSecret(name, value) {
			return Hidden
		}
		return maskURL(value)
	}
	var b strings.Builder
	rest := value
	for rest != "" {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(maskLiteral(rest))
			break
		}
		end := strings.IndexByte(rest[i:], '}')
		if end < 0 {
			b.WriteString(maskLiteral(rest))
			break
		}
		b.WriteString(maskLiteral(rest[:i]))
		b.WriteString(rest[i : i+end+1])
		rest = rest[i+end+1:]
	}
	return b.String()
}

// maskLiteral judges each word of one literal part of a value by its
// shape alone, keeping the spaces and an auth scheme ("Bearer ") as
// written.
func maskLiteral(s string) string {
	var b strings.Builder
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			i = len(s)
		}
		word := s[:i]
		if word != "" && clients.LooksSecret("", word) {
			word = Hidden
		} else {
			word = maskURL(word)
		}
		b.WriteString(word)
		if i < len(s) {
			b.WriteByte(' ')
			i++
		}
		s = s[i:]
	}
	return b.String()
}

// maskURL hides the parts of a URL that hold a literal credential, by
// the rule import refuses a url by: the password of its user info
// (postgres://me:pw@host/db), a query value named or shaped like a
// secret; and a path segment that looks like a key (urlmask, the rule of
// the dashboard and of remote's errors). Anything else is returned
// as is.
func maskURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	out := s
	if u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			at := strings.Index(out, "@")
			colon := strings.LastIndex(out[:max(at, 0)], ":")
			if at > 0 && colon > 0 {
				out = out[:colon+1] + Hidden + out[at:]
			}
		}
	}
	if u.RawQuery != "" {
		q := strings.Split(u.RawQuery, "&")
		for i, kv := range q {
			k, v, _ := strings.Cut(kv, "=")
			uk, err1 := url.QueryUnescape(k)
			uv, err2 := url.QueryUnescape(v)
			if err1 == nil && err2 == nil && clients.SecretQueryValue(uk, uv) {
				q[i] = k + "=" + Hidden
			}
		}
		out = strings.Replace(out, "?"+u.RawQuery, "?"+strings.Join(q, "&"), 1)
	}
	return urlmask.HidePath(out, Hidden)
}

// MaskArgs hides the arguments of a command line that hold a literal
// credential, by the rule import refuses args by (clients.ArgSecret: the
// value of a flag named like a secret, --token VALUE or --token=VALUE,
// NAME=VALUE like an env entry, a header given as one argument, a
// program's own password flag such as mysql's -p, or a value shaped like
// a token), and the credentials of a URL. args may start with the
// program; MaskCommand says which it is when it does not.
func MaskArgs(args []string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		k, v, joined := strings.Cut(a, "=")
		switch off := clients.ArgSecret(args, i); {
		case off >= 0:
			out[i] = a[:off] + Hidden
		case joined && strings.Contains(v, "://") && !strings.Contains(k, "://"):
			out[i] = k + "=" + maskURL(v) // --db=URL, DATABASE_URL=URL
		default:
			out[i] = maskURL(a)
		}
	}
	return out
}

// MaskCommand is MaskArgs of a declaration's args, judged with its
// command in front of them (the command decides what -p means).
func MaskCommand(command string, args []string) []string {
	if args == nil {
		return nil
	}
	return MaskArgs(append([]string{command}, args...))[1:]
}

// Masked is v as shown to a person or printed: every env entry, header,
// argument and URL password that looks like a secret is Hidden. v itself
// is not changed. A project server is not masked: its values come from
// the repository, not from the user, and hiding them would let the
// repository choose what a person reviewing it cannot see.
func (v ServerView) Masked() ServerView {
	if v.Scope == "project" {
		return v
	}
	v.Env = maskMap(v.Env)
	v.Headers = maskMap(v.Headers)
	v.Args = MaskCommand(v.Command, v.Args)
	v.URL = maskServerURL(v.URL)
	return v
}

// maskServerURL is a remote server's url as shown: its password and the
// value of every query parameter hidden, whatever it looks like (a hosted
// server often takes its key there, and a short key has no shape to tell
// it by), the names kept; a value that is only ${env:NAME} references is
// kept too, as it holds no secret.
func maskServerURL(s string) string {
	s = maskURL(s)
	base, rest, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	query, frag, hasFrag := strings.Cut(rest, "#")
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok && !urlmask.PlainQueryItem(p) && p != Hidden {
			parts[i] = Hidden // a bare item (?sk_live_...) is a value too, a flag (?debug) not
			continue
		}
		if !ok || v == "" || v == Hidden {
			continue
		}
		if uv, err := url.QueryUnescape(v); err != nil || !refsOnly(uv) {
			parts[i] = k + "=" + Hidden
		}
	}
	out := base + "?" + strings.Join(parts, "&")
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// refsOnly reports whether v is made of ${...} references alone.
func refsOnly(v string) bool {
	for v != "" {
		if !strings.HasPrefix(v, "${") {
			return false
		}
		end := strings.IndexByte(v, '}')
		if end < 0 {
			return false
		}
		v = v[end+1:]
	}
	return true
}

func maskMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, val := range m {
		out[k] = MaskValue(k, val)
	}
	return out
}

// Masked is r with every server Masked, for printing.
func (r *Report) Masked() *Report {
	c := *r
	c.Servers = make([]ServerView, len(r.Servers))
	for i, s := range r.Servers {
		c.Servers[i] = s.Masked()
	}
	return &c
}
