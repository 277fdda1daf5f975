package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"sluice/gateway/clients"
	"sluice/gateway/clitool"
	"sluice/gateway/config"
	"sluice/gateway/oauth"
	"sluice/gateway/proc"
)

// minScrubbed is the shortest credential scrubbed from a server's stderr:
// a shorter one would hide ordinary words and is hardly a secret.
const minScrubbed = 4

// declSecrets lists the credentials d's process is given, as it gets them
// (env expanded): every env value a listing hides by its name or shape
// (without its auth scheme, and each word of one on its own), a
// url's password, and the part of each argument the listing hides.
//
// # Why a server's stderr is scrubbed of its own credentials
//
// A server that fails often prints what it was started with ("login
// refused for --password hunter2", a usage line repeating its argv, its
// environment). Its stderr reaches the log, the CLI's error, the
// dashboard and a cli tool's result to the model; the redaction filters
// only know generic token shapes, while the gateway knows the exact
// values it passed.
func declSecrets(d config.Server, env map[string]string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= minScrubbed {
			out = append(out, s)
		}
	}
	for k, v := range env {
		if clients.LooksSecret(k, v) {
			bare := v
			for _, scheme := range []string{"Bearer ", "bearer ", "Basic ", "basic ", "Token ", "token "} {
				bare = strings.TrimPrefix(bare, scheme)
			}
			if clients.LooksSecret("", bare) || namedSecret(bare) {
				add(bare)
				addBasic(add, bare)
			}
			for _, w := range strings.Fields(v) {
				if w != v && clients.LooksSecret("", w) || clients.LooksSecret(k, w) && namedSecret(w) {
					add(w)
				}
			}
		}
		addURL(add, v)
	}
	lines := [][]string{append([]string{d.Command}, d.Args...)}
	if d.CLI != nil {
		for _, t := range d.CLI.Tools {
			lines = append(lines, literalArgv(t.Spec.Argv))
		}
	}
	for _, line := range lines {
		for i := 1; i < len(line); i++ {
			if off := clients.ArgSecret(line, i); off >= 0 {
				add(line[i][off:])
				addBasic(add, line[i][off:])
				if off > 0 && line[i][off-1] == ':' {
					// curl -u user:pw: sent as Basic base64(user:pw)
					start := strings.LastIndexAny(line[i][:off-1], "= ") + 1
					add(base64.StdEncoding.EncodeToString([]byte(line[i][start:])))
				}
			}
			addURL(add, line[i])
		}
	}
	for _, w := range out {
		// as a JSON string prints it ({"password":"quo\"te"})
		if q, _ := json.Marshal(w); string(q[1:len(q)-1]) != w {
			out = append(out, string(q[1:len(q)-1]))
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// stdoutSecrets is declSecrets for a server's messages: an env value
// only when its name is a credential's own (credentialName), it reads
// as a credential by its shape (a token's, or one word of letters and
// digits) or holds a url's password.
//
// # Why a value named like a credential is not enough on stdout
//
// A setting under a name that reads as a credential's (AUTH_MODE:
// readonly, SESSION_DRIVER: database) is an ordinary word. Hidden from
// stderr it costs a word of a log line; hidden from a server's messages
// it renames a tool (list_(hidden)s), a schema key or an annotation
// ("(hidden)Hint"), and the agent calls what the server does not have.
// A credential is named as one or has one's shape.
func stdoutSecrets(d config.Server, env map[string]string) []string {
	kept := make(map[string]string, len(env))
	for k, v := range env {
		bare := v
		for _, scheme := range []string{"Bearer ", "bearer ", "Basic ", "basic ", "Token ", "token "} {
			bare = strings.TrimPrefix(bare, scheme)
		}
		if credentialName(k) || clients.LooksSecret("", bare) || urlPassword(v) != "" || mixed(bare) {
			kept[k] = v
		}
	}
	return declSecrets(d, kept)
}

// credentialName tells whether an env name is a credential's own (its
// last word: DB_PASSWORD, GPG_PASSPHRASE, API_TOKEN, SSHPASS), not one
// that only mentions a credential's domain (AUTH_MODE, TOKEN_STORE,
// SESSION_COOKIE_NAME), whose value is a setting unless its shape says
// otherwise.
func credentialName(k string) bool {
	w := strings.ToLower(k)
	last, two := w, w
	if i := strings.LastIndexAny(w, "_-."); i >= 0 {
		last = w[i+1:]
		if j := strings.LastIndexAny(w[:i], "_-."); j >= 0 {
			two = w[j+1:]
		}
	}
	switch last {
	case "password", "passwd", "pass", "pw", "passphrase", "passcode", "secret", "token", "apikey", "sshpass",
		"credential", "credentials", "cookie", "bearer", "authorization":
		return true
	}
	switch strings.ReplaceAll(strings.ReplaceAll(two, "-", "_"), ".", "_") {
	case "api_key", "private_key", "secret_key", "access_key", "auth_key", "signing_key":
		return true
	}
	return false
}

// mixed tells whether v, a literal value of an env entry named like a
// credential, reads as one: at least 8 bytes, one word, letters and
// digits both (tok-Value-2026, not readonly or vault-kv).
func mixed(v string) bool {
	return len(v) >= 8 && !strings.ContainsAny(v, " \t\r\n") && strings.ContainsAny(v, "0123456789") &&
		strings.IndexFunc(v, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) >= 0
}

// namedSecret tells whether v, the value of an env entry whose name
// reads as a credential's (AUTH_MODE, SESSION_STORE as well as
// API_TOKEN) but whose shape does not, is scrubbed: at least 8 bytes,
// not a number, a path or a url (a url's password is added on its own).
// A shorter value or a setting (oauth, redis, true) is an ordinary word
// the server's stderr is full of, inside other words too.
func namedSecret(v string) bool {
	return len(v) >= 8 && !strings.Contains(v, "://") && !strings.ContainsRune("/.~", rune(v[0])) && strings.Trim(v, "0123456789") != ""
}

// addURL adds the password of s, a url or NAME=url / --flag=url, both as
// given (percent-encoded: a server echoes its url as it got it) and
// decoded, the Basic credential a client makes of the userinfo, and the
// credentials in its query and path (addURLParts).
func addURL(add func(string), s string) {
	if i, j := strings.IndexByte(s, '='), strings.Index(s, "://"); i >= 0 && i < j {
		s = s[i+1:]
	}
	addURLParts(add, s)
	pw := urlPassword(s)
	if pw == "" {
		return
	}
	add(pw)
	u, _ := url.Parse(s)
	add(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pw)))
	rest := s[strings.Index(s, "://")+3:]
	if k := strings.IndexAny(rest, "/?#"); k >= 0 {
		rest = rest[:k]
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if c := strings.IndexByte(rest[:at], ':'); c >= 0 {
			add(rest[c+1 : at])
		}
	}
}

// addURLParts adds the query values of s, a url, that read as
// credentials by their name and their shape (?api_key=, not ?auth=true,
// whose every true a server's messages are full of) and its path
// segments with a token's shape.
func addURLParts(add func(string), s string) {
	if !strings.Contains(s, "://") {
		return
	}
	u, err := url.Parse(s)
	if err != nil {
		return
	}
	for k, vs := range u.Query() {
		for _, v := range vs {
			if clients.LooksSecret(k, v) && (clients.LooksSecret("", v) || mixed(v)) {
				add(v)
			}
		}
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if clients.LooksSecret("", seg) {
			add(seg)
		}
	}
}

// addBasic adds, for a Basic credential (base64 of user:password), the
// user:password and the password it decodes to: a server that logs the
// header it got may log them.
func addBasic(add func(string), s string) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || !utf8.Valid(b) {
		return
	}
	if c := bytes.IndexByte(b, ':'); c > 0 {
		add(string(b))
		add(string(b[c+1:]))
	}
}

// literalArgv is a cli tool's argv template as a command line: its text
// elements in order, groups flattened, a literal as the program gets it
// ("{{x}}" is "{x}"), one with a placeholder as written (which no rule
// takes for a credential's value when it is literal).
func literalArgv(es []clitool.Elem) []string {
	var out []string
	for _, e := range es {
		if e.Group != nil {
			out = append(out, literalArgv(e.Group)...)
			continue
		}
		if lit, ok := clitool.Literal(e.Text); ok {
			out = append(out, lit)
		} else {
			out = append(out, e.Text)
		}
	}
	return out
}

// urlPassword is the password of s when s is a url with one, else "".
func urlPassword(s string) string {
	if !strings.Contains(s, "://") {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}

// scrubber replaces each of secrets (longest first) in a line by Hidden;
// nil when there is none.
func scrubber(secrets []string) proc.Scrubber {
	if ss := newScrubber(secrets); ss != nil {
		return ss
	}
	return nil
}

// newScrubber is scrubber's, as its own type (which also scrubs the
// JSON-RPC messages of a server's stdout: ScrubMessage); nil when
// secrets is empty.
//
// # Why the case of a letter does not matter
//
// A server that prints what it was given often changes its case (an
// error message upper-cases a key, a hex digest is shown in capitals), so
// every match is ASCII case-insensitive: a secret of at least
// minScrubbed bytes is hardly an ordinary word in any case.
func newScrubber(secrets []string) *secretScrubber {
	if len(secrets) == 0 {
		return nil
	}
	ss := &secretScrubber{}
	seen := map[string]int{} // a form's index in ss.forms
	for _, s := range secrets {
		if strings.TrimSpace(s) == "" {
			continue // white space only: it would match between JSON tokens
		}
		// as a server that logs a url it built prints it too
		given := []string{s}
		for _, e := range []string{url.QueryEscape(s), url.PathEscape(s)} {
			if !slices.Contains(given, e) {
				given = append(given, e)
			}
		}
		for _, g := range given {
			for k, f := range jsonForms(g) {
				// the form as given, when it holds a byte a JSON string
				// always escapes, is no text inside one
				text := k == 0 && strings.ContainsFunc(g, func(r rune) bool { return r == '\\' || r == '"' || r < 0x20 })
				if f = lowerASCII(f); len(f) < minScrubbed {
					continue
				}
				if at, ok := seen[f]; ok {
					ss.forms[at].text = ss.forms[at].text && text
					continue
				}
				seen[f] = len(ss.forms)
				p := foldPattern(f)
				p.text = text
				ss.forms = append(ss.forms, p)
			}
		}
	}
	if len(ss.forms) == 0 {
		return nil // nothing long enough to hide: no scan at all
	}
	sort.SliceStable(ss.forms, func(i, j int) bool { return len(ss.forms[i].s) > len(ss.forms[j].s) })
	for _, p := range ss.forms {
		if bytes.ContainsAny(p.s, "\" \t\r\n,:[]{}") {
			ss.spanning = append(ss.spanning, p)
		}
	}
	return ss
}

// secretScrubber is newScrubber's: every secret in each form a server
// may print it (as given, JSON-escaped), lower-cased, longest first.
type secretScrubber struct {
	forms []foldPat
	// spanning are the forms with a byte a JSON token ends at (see
	// hideSpans)
	spanning []foldPat
}

// Scrub returns line with each secret (in any case) replaced by Hidden;
// line itself when it holds none.
func (ss *secretScrubber) Scrub(line []byte) []byte {
	for _, p := range ss.forms {
		i := p.index(line)
		if i < 0 {
			continue
		}
		out := make([]byte, 0, len(line))
		for i >= 0 {
			out = append(out, line[:i]...)
			out = append(out, Hidden...)
			line = line[i+len(p.s):]
			i = p.index(line)
		}
		line = append(out, line...)
	}
	return line
}

// Partial is the length of the longest end of b that begins a secret (in
// any case) without being all of it.
func (ss *secretScrubber) Partial(b []byte) int {
	k := 0
	for _, p := range ss.forms {
		for n := min(len(p.s)-1, len(b)); n > k; n-- {
			if equalFoldASCII(b[len(b)-n:], p.s[:n]) {
				k = n
				break
			}
		}
	}
	return k
}

// contains tells whether b holds any secret in any of its forms.
func (ss *secretScrubber) contains(b []byte) bool {
	for _, p := range ss.forms {
		if p.index(b) >= 0 {
			return true
		}
	}
	return false
}

// foldPat is a lower-cased pattern and the byte of it a search looks for
// first (its anchor: a byte that is not a letter when there is one, so
// one byte search finds the candidates in either case).
type foldPat struct {
	s      []byte
	anchor int
	// text: matched outside a JSON string only (a secret as given that
	// holds a backslash, quote or control character, which a string
	// writes escaped: inside one, its backslash would begin an escape)
	text bool
}

func foldPattern(s string) foldPat {
	p := foldPat{s: []byte(s)}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'a' || c > 'z' {
			p.anchor = i
			break
		}
	}
	return p
}

// index is the offset of the first match of p in b, in any ASCII case,
// or -1.
func (p foldPat) index(b []byte) int {
	n, a := len(p.s), p.anchor
	if len(b) < n {
		return -1
	}
	lo := p.s[a]
	up := lo
	if lo >= 'a' && lo <= 'z' {
		up = lo - 'a' + 'A'
	}
	nl, nu := -2, -2 // the next offset of lo and of up at or after from (-1: none)
	for from := a; from <= len(b)-n+a; {
		if nl != -1 && nl < from {
			if nl = bytes.IndexByte(b[from:], lo); nl >= 0 {
				nl += from
			}
		}
		if up == lo {
			nu = nl
		} else if nu != -1 && nu < from {
			if nu = bytes.IndexByte(b[from:], up); nu >= 0 {
				nu += from
			}
		}
		at := nl
		if at < 0 || (nu >= 0 && nu < at) {
			at = nu
		}
		if at < 0 || at-a+n > len(b) {
			return -1
		}
		if equalFoldASCII(b[at-a:at-a+n], p.s) {
			return at - a
		}
		from = at + 1
	}
	return -1
}

// equalFoldASCII tells whether b equals lower (lower-cased) but for the
// case of ASCII letters.
func equalFoldASCII(b, lower []byte) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// remoteSecrets lists what the gateway sends a remote server: the header
// values that read as credentials (as stdoutSecrets judges env values:
// X-Auth-Mode: readonly is a setting), the url's
// password and its query values and path segments that read as
// credentials (addURL).
func remoteSecrets(d config.Server, headers map[string]string) []string {
	out := stdoutSecrets(config.Server{}, headers)
	add := func(s string) {
		if len(s) >= minScrubbed {
			out = append(out, s)
		}
	}
	addURL(add, d.URL)
	return out
}

// remoteScrub is mcp.Options.Scrub for a remote server (messages) and
// remote.Options.ScrubText (HTTP error bodies): remoteSecrets and the
// OAuth tokens of a (nil: none), which change as they are refreshed;
// both nil when there is nothing to hide.
func remoteScrub(d config.Server, headers map[string]string, a *oauth.Authorizer) (messages, text func([]byte) []byte) {
	static := remoteSecrets(d, headers)
	if a == nil {
		ss := newScrubber(static)
		if ss == nil {
			return nil, nil
		}
		return ss.ScrubMessage, ss.Scrub
	}
	l := &liveScrubber{static: static, live: a.Secrets}
	return l.ScrubMessage, l.Scrub
}

// liveScrubber scrubs with static and the secrets live returns, built
// again when those change.
type liveScrubber struct {
	static []string
	live   func() ([]string, bool)

	mu    sync.Mutex
	built bool
	last  []string
	seen  []string // the last keptTokens live secrets no longer current, oldest first
	ss    *secretScrubber
}

// keptTokens is how many retired live secrets a liveScrubber keeps
// hiding after they change (the current ones it always hides): an answer to a request sent with a token may arrive after
// a refresh replaced it.
const keptTokens = 8

// current is the scrubber for the secrets in use now and recently (nil:
// none). The static ones are in it from the first message on, also while
// live is busy.
func (l *liveScrubber) current() *secretScrubber {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := !l.built
	l.built = true
	if cur, ok := l.live(); ok && !slices.Equal(cur, l.last) {
		for _, s := range l.last {
			// retired: kept a while, the current ones always
			if len(s) >= minScrubbed && !slices.Contains(cur, s) && !slices.Contains(l.seen, s) {
				l.seen = append(l.seen, s)
			}
		}
		l.seen = slices.DeleteFunc(l.seen, func(s string) bool { return slices.Contains(cur, s) })
		if len(l.seen) > keptTokens {
			l.seen = slices.Clone(l.seen[len(l.seen)-keptTokens:])
		}
		l.last, changed = cur, true
	}
	if changed {
		l.ss = newScrubber(append(append(slices.Clip(l.static), l.last...), l.seen...))
	}
	return l.ss
}

func (l *liveScrubber) ScrubMessage(msg []byte) []byte {
	if ss := l.current(); ss != nil {
		return ss.ScrubMessage(msg)
	}
	return msg
}

func (l *liveScrubber) Scrub(text []byte) []byte {
	if ss := l.current(); ss != nil {
		return ss.Scrub(text)
	}
	return text
}
