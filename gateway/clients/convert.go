package clients

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Decl is an Entry as a sluice declaration.
type Decl struct {
	ID        string // the sluice server id
	From      string // the entry's name in the client's file
	Line      int
	Command   string
	Args      []string
	Cwd       string
	Env       []KV // values are literal text or ${env:NAME} references
	URL       string
	Transport string
	Headers   []KV
	TimeoutMs int
	// Notes are for the person: what to set, what was not imported.
	// They never hold a secret value.
	Notes []string
	// SetVars are the variables the person must set for the server to
	// start (each a former literal secret or client prompt).
	SetVars []string
	// Skip, when set, says why the entry is not imported at all.
	Skip string
}

// ConvertOptions tunes Convert.
type ConvertOptions struct {
	// Taken reports a server id already declared where the import
	// writes, with where ("" = free).
	Taken func(id string) string
	// RemoveFlags are the flags 'sluice remove ID' needs to remove a
	// taken id from where the import writes (" --project" there).
	RemoveFlags string
	// Workspace replaces ${workspaceFolder} and ${workspaceRoot} ("" =
	// left as written, with a note).
	Workspace string
}

var (
	idBad = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9_-]+`) })
	// secretNameRe: a name that mentions a credential (see secretName).
	secretNameRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(token|secret|passw|pwd|passphrase|passcode|passkey|mnemonic|seed_?phrase|api_?key|apikey|access_?key|private_?key|auth|credential|cookie|session|bearer|signature|[-_.]key$|^key$|(^|_)pass$|(^|[-_.])(pw|psk)$|sshpass)`)
	})
	// plainName: names secretNameRe takes that are well known to hold
	// no credential: the shell's working directories (PWD, OLDPWD) and
	// Playwright's debug switch (PWDEBUG).
	plainName  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^(old)?pwd$|^pwdebug$`) })
	tokenShape = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|sk-|sk_live_|sk_test_|rk_live_|xox[abpr]-|AKIA|ASIA|AIza|ya29\.|eyJ|npm_|hf_|pypi-|dop_v1_|shpat_)`)
	})
	opaque  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_\-+=]{24,}$`) })
	digit   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9]`) })
	letter  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z]`) })
	envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	// refs in the clients' syntaxes: ${env:NAME}, ${NAME}, ${NAME:-x}, $NAME, ${input:ID}, ${workspaceFolder}
	refPat = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}|\$\{input:([^}]*)\}|\$\{(workspaceFolder|workspaceRoot|userHome)\}|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)
	})
)

// secretName reports whether an env entry, header, query parameter or
// flag is named like a credential: the one name rule of the listings'
// masks, import and the stdout and stderr scrub. It takes a name that
// mentions one (API_TOKEN, DB_PASSWORD, GPG_PASSPHRASE, VPN_PASSCODE,
// WALLET_MNEMONIC, LDAP_BIND_PW, SSHPASS, REDIS_PASS, WIFI_PSK) and not
// a word that merely contains the letters of one (BYPASS, COMPASS,
// PASSTHROUGH, PW_TEST_REPORTER, PWD).
func secretName(k string) bool {
	return secretNameRe().MatchString(k) && !plainName().MatchString(k)
}

// ID turns a client's server name into a sluice server id:
// lowercase, runs of other characters as "-", no "__", at most 32
// characters. "" when nothing is left.
func ID(name string) string {
	s := idBad().ReplaceAllString(strings.ToLower(name), "-")
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	s = strings.Trim(s, "-_")
	if len(s) > 32 {
		s = strings.TrimRight(s[:32], "-_")
	}
	return s
}

// LooksSecret reports whether an env entry or header is probably a
// credential: by its name or by the shape of its value.
func LooksSecret(key, value string) bool {
	if value == "" || isRefOnly(value) {
		return false
	}
	if secretName(key) {
		return true
	}
	v := value
	for _, p := range []string{"Bearer ", "bearer ", "Basic ", "token ", "Token "} {
		v = strings.TrimPrefix(v, p)
	}
	return tokenShape().MatchString(v) || (opaque().MatchString(v) && digit().MatchString(v) && letter().MatchString(v))
}

// secretOutsideEnv names the first argument or url part that holds a
// literal credential ("" when none does): a value after (or joined by =
// to) a flag named like one, a query parameter named like one, or any
// argument, query value or path segment with a known token shape.
func secretOutsideEnv(command string, args []string, rawURL string) string {
	line := append([]string{command}, args...)
	for i, a := range args {
		if ArgSecret(line, i+1) >= 0 {
			return fmt.Sprintf("args[%d]", i)
		}
		if k, v, ok := strings.Cut(a, "="); ok && !strings.Contains(k, "://") {
			a = v // --db=URL, DATABASE_URL=URL
		}
		if strings.Contains(a, "://") && urlSecret(a) != "" {
			return fmt.Sprintf("args[%d] (%s)", i, urlSecret(a))
		}
	}
	return urlSecret(rawURL)
}

// urlSecret names the part of rawURL that holds a literal credential: a
// query parameter named or shaped like one, or a path segment with a
// known token shape ("" when none does).
func urlSecret(rawURL string) string {
	u, err := url.Parse(rawURL)
	if rawURL == "" || err != nil {
		return ""
	}
	q := u.Query()
	for _, k := range slices.Sorted(maps.Keys(q)) {
		for _, v := range q[k] {
			if SecretQueryValue(k, v) {
				return fmt.Sprintf("the url's query parameter %q", k)
			}
		}
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if tokenLike(seg) {
			return "a segment of the url's path"
		}
	}
	return ""
}

// SecretArg reports whether args[i] holds a literal credential: a value
// with a known token shape; a value after (or joined by = to) a flag whose
// name ends in a credential's (--token, --api-key, --db-password), whatever
// it looks like; or a value after a flag that merely mentions one
// (--auth-mode, --secret-store, --session) unless it reads as a word
// (keychain, read-only, api.example.com). A flag whose last word is the
// thing a credential opens or signs (--auth, --session, --signature,
// --sort-key) lets only a short word through (required, persistent,
// created_at): a longer run of lowercase words after it is a passphrase
// (opensesame.please, mysessionsecret). References, paths and flags are
// never credentials. ArgSecret, the rule import refuses args by and a
// declaration's args are masked by when shown, starts from it.
func SecretArg(args []string, i int) bool {
	a := args[i]
	flag, val := "", a
	if strings.HasPrefix(a, "-") {
		if f, v, ok := strings.Cut(a, "="); ok {
			flag, val = f, v
		}
	} else if i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=") {
		flag = args[i-1]
	}
	name := strings.TrimLeft(flag, "-")
	switch {
	case tokenLike(val):
		return true
	case name == "" || flagNotSecret().MatchString(name) || !valueAfterFlag(val):
		return false
	case credentialFlag().MatchString(name):
		return true
	}
	if !secretName(name) || !plausibleSecret(val) || settingWords().MatchString(val) {
		return false
	}
	return !plainWord().MatchString(val) || credentialNoun().MatchString(name) && len(val) > settingWordMax
}

// settingWordMax is the longest plain word taken for a setting after a
// flag named by credentialNoun: the values such flags take (required,
// persistent, interactive) are short; a passphrase of words is longer.
const settingWordMax = 12

var (
	// credentialFlag: a flag named for the credential itself, so its
	// value is one however plain (--password swordfish).
	credentialFlag = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(^|[-_.])(token|secret|passw(or)?d|pwd|pw|passphrase|passcode|passkey|api[-_]?key|apikey|(access|private|secret|client|signing|license|encryption|master|session|shared|hmac|webhook|app|service|account|admin|root|deploy|ssh|gpg|pgp|aes|crypto|cipher|consumer|subscription)[-_]?key|session[-_]?id|credentials?|cookie|bearer)$|^(key|pass|pw|passin|passout)$`)
	})
	// credentialNoun: a flag whose last word is what a credential opens or
	// signs, or a key of some kind, so a passphrase is a likely value.
	credentialNoun = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(^|[-_.])(auth|session|sig|signature|key|sid|otp|pin|seed|salt)$`)
	})
	// plainWord: letters in words joined by - _ or ., which a generated
	// credential is not (a mode, a backend, a host name).
	plainWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][a-z]*([-_.][a-z]+)*$`) })
	// settingWords: lowercase words joined by - or _ (last_modified_time,
	// oauth-device-flow, hmac-sha256-base64): a column, mode or algorithm
	// name after a flag that only mentions a credential, not a passphrase.
	settingWords = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9]*([-_][a-z][a-z0-9]*)+$`) })
)

// valueAfterFlag: something a flag could take as a credential: not empty,
// one word, not a flag, a path or a reference.
func valueAfterFlag(v string) bool {
	return v != "" && !strings.ContainsAny(v, " \t") && !strings.HasPrefix(v, "-") && !isRefOnly(v) && !strings.ContainsRune("/.~", rune(v[0]))
}

// SecretQueryValue reports whether the url query parameter k=v holds a
// literal credential, by its name or its shape.
func SecretQueryValue(k, v string) bool {
	return secretName(k) && plausibleSecret(v) || tokenLike(v)
}

// flagNotSecret: a flag named like where a credential is kept
// (--token-file) or like a count of something (--max-tokens).
var flagNotSecret = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[-_.])(files?|paths?|dirs?|env|vars?|names?|urls?|counts?|limits?|max|min|sizes?|types?|headers?|prefix)($|[-_.])`)
})

// plausibleSecret: long enough, one word, not a number, path or reference.
func plausibleSecret(v string) bool {
	if len(v) < 8 || strings.ContainsAny(v, " \t") || strings.HasPrefix(v, "-") || isRefOnly(v) || strings.ContainsRune("/.~", rune(v[0])) {
		return false
	}
	return strings.Trim(v, "0123456789") != ""
}

func tokenLike(v string) bool {
	for _, p := range []string{"Bearer ", "bearer ", "Basic ", "token ", "Token "} {
		v = strings.TrimPrefix(v, p)
	}
	return len(v) >= 16 && tokenShape().MatchString(v)
}

func isRefOnly(v string) bool {
	loc := refPat().FindStringIndex(v)
	return loc != nil && loc[0] == 0 && loc[1] == len(v)
}

// varName makes an environment variable name from parts.
func varName(parts ...string) string {
	s := strings.ToUpper(strings.Join(parts, "_"))
	s = regexp.MustCompile(`[^A-Z0-9_]+`).ReplaceAllString(s, "_")
	s = strings.Trim(s, "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "V_" + s
	}
	return s
}

// Convert turns a file's entries into declarations. Entries whose id is
// taken or that declare neither a command nor a url come back with Skip.
func Convert(src *Source, o ConvertOptions) []Decl {
	var out []Decl
	used := map[string]bool{}
	for _, e := range src.Entries {
		d := Decl{From: e.Name, Line: e.Line, Command: e.Command, Args: e.Args, Cwd: e.Cwd, URL: e.URL, TimeoutMs: e.TimeoutMs}
		d.ID = ID(e.Name)
		base := d.ID
		for n := 2; d.ID != "" && used[d.ID]; n++ {
			d.ID = fmt.Sprintf("%s-%d", strings.TrimRight(base[:min(len(base), 29)], "-_"), n)
		}
		switch {
		case d.ID == "":
			d.Skip = fmt.Sprintf("the name %q has no letters or digits to make a server id of; rename the entry in its file, or declare the server with 'sluice add ID -- COMMAND ARGS'", e.Name)
		case e.Command == "" && e.URL == "":
			d.Skip = "it declares neither a command nor a url; give the entry one in its file and import again"
		case e.Command != "" && e.URL != "":
			d.Skip = "it declares both a command and a url; keep the one the server uses in its file and import again"
		}
		if d.Skip == "" {
			if where := secretOutsideEnv(e.Command, e.Args, e.URL); where != "" {
				d.Skip = where + " looks like a secret, and sluice expands references only in env and headers, so importing it would copy the secret into the declaration; " +
					"pass it through env or a header if the server reads one there, and declare the server by hand ('sluice add " + d.ID + " --env NAME=VALUE -- COMMAND ARGS')"
				d.Args, d.URL = nil, ""
			}
		}
		if d.Skip == "" && o.Taken != nil {
			if where := o.Taken(d.ID); where != "" {
				d.Skip = fmt.Sprintf("server %s is already declared in %s; to import this one instead, run 'sluice remove %s%s' and import again", d.ID, where, d.ID, o.RemoveFlags)
			}
		}
		if d.Skip != "" {
			out = append(out, d)
			continue
		}
		used[d.ID] = true
		if d.ID != e.Name {
			d.Notes = append(d.Notes, fmt.Sprintf("named %s (sluice ids are lowercase letters, digits, - and _)", d.ID))
		}
		if e.URL != "" {
			d.Transport = e.Transport
		}
		if e.Disabled {
			d.Notes = append(d.Notes, "disabled in "+src.Client.Title)
		}
		for i, a := range d.Args {
			d.Args[i] = d.literal(a, "args", o)
		}
		d.Cwd = d.literal(d.Cwd, "cwd", o)
		for _, kv := range e.Env {
			d.Env = append(d.Env, KV{Key: kv.Key, Value: d.value(kv.Key, kv.Value, kv.Key, o)})
		}
		if e.BearerEnv != "" {
			e.Headers = append(e.Headers, KV{Key: "Authorization", Value: "Bearer ${env:" + e.BearerEnv + "}"})
		}
		for _, h := range e.Headers {
			d.Headers = append(d.Headers, KV{Key: h.Key, Value: d.header(h.Key, h.Value, o)})
		}
		d.Notes = append(d.Notes, e.Problems...)
		out = append(out, d)
	}
	return out
}

// literal handles a field sluice passes as written (args, cwd): workspace
// references are replaced when o says with what; other references stay,
// with a note.
func (d *Decl) literal(v, field string, o ConvertOptions) string {
	if !strings.Contains(v, "$") {
		return v
	}
	out := refPat().ReplaceAllStringFunc(v, func(m string) string {
		sub := refPat().FindStringSubmatch(m)
		if sub[3] == "workspaceFolder" || sub[3] == "workspaceRoot" {
			if o.Workspace != "" {
				return o.Workspace
			}
		}
		return m
	})
	if refPat().MatchString(out) {
		d.Notes = append(d.Notes, fmt.Sprintf("%s holds %s, which sluice passes as written (it expands references only in env and headers)", field, quoteNote(out)))
	}
	return out
}

func quoteNote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// value converts an env value: references become ${env:NAME}; a
// literal secret becomes ${env:KEY} with a note (the value is dropped).
func (d *Decl) value(key, v, want string, o ConvertOptions) string {
	if refPat().MatchString(v) {
		return d.refs(v, want)
	}
	if LooksSecret(key, v) {
		name := want
		if !envName().MatchString(name) {
			name = varName(d.ID, key)
		}
		d.need(name, fmt.Sprintf("env %s looked like a secret and was not copied: set %s in the environment sluice runs in", key, name))
		return "${env:" + name + "}"
	}
	return v
}

// header converts a header value like value, keeping an auth scheme.
func (d *Decl) header(key, v string, o ConvertOptions) string {
	if refPat().MatchString(v) {
		return d.refs(v, varName(d.ID, key))
	}
	if !LooksSecret(key, v) {
		return v
	}
	scheme := ""
	for _, p := range []string{"Bearer ", "bearer ", "Basic ", "basic ", "token ", "Token "} {
		if strings.HasPrefix(v, p) {
			scheme = p
		}
	}
	name := varName(d.ID, key)
	if scheme != "" {
		name = varName(d.ID, "token")
	}
	d.need(name, fmt.Sprintf("header %s looked like a secret and was not copied: set %s in the environment sluice runs in", key, name))
	return scheme + "${env:" + name + "}"
}

// refs rewrites every reference of v into sluice's ${env:NAME}.
func (d *Decl) refs(v, fallback string) string {
	return refPat().ReplaceAllStringFunc(v, func(m string) string {
		sub := refPat().FindStringSubmatch(m)
		switch {
		case sub[1] != "":
			return m
		case sub[2] != "":
			name := varName(d.ID, sub[2])
			d.need(name, fmt.Sprintf("%s was asked for by a client prompt (input %q): set %s instead", fallback, sub[2], name))
			return "${env:" + name + "}"
		case sub[3] != "":
			d.Notes = append(d.Notes, fmt.Sprintf("${%s} has no sluice counterpart and was kept as text", sub[3]))
			return m
		case sub[4] != "":
			if sub[5] != "" {
				d.Notes = append(d.Notes, fmt.Sprintf("the default of ${%s%s} was dropped: sluice requires %s to be set", sub[4], sub[5], sub[4]))
			}
			return "${env:" + sub[4] + "}"
		default:
			return "${env:" + sub[6] + "}"
		}
	})
}

func (d *Decl) need(name, note string) {
	for _, n := range d.SetVars {
		if n == name {
			return
		}
	}
	d.SetVars = append(d.SetVars, name)
	d.Notes = append(d.Notes, note)
}

// Render writes decls (those without Skip) as the members of a servers
// mapping, each entry indented by indent and its fields by two more
// levels of the same unit, with the notes as comments above it. Strings
// are double-quoted (JSON escapes are YAML escapes).
func Render(decls []Decl, src *Source, indent, unit string) string {
	var b strings.Builder
	in := indent + unit
	for _, d := range decls {
		if d.Skip != "" {
			continue
		}
		where := src.Client.Title
		if src.Path != "" {
			where += ", " + src.Path
		}
		fmt.Fprintf(&b, "%s# imported from %s: %s\n", indent, comment(where), comment(q(d.From)))
		for _, n := range d.Notes {
			fmt.Fprintf(&b, "%s# note: %s\n", indent, comment(n))
		}
		fmt.Fprintf(&b, "%s%s:\n", indent, d.ID)
		if d.URL != "" {
			fmt.Fprintf(&b, "%surl: %s\n", in, q(d.URL))
			if d.Transport != "" && d.Transport != TransportAuto {
				fmt.Fprintf(&b, "%stransport: %s\n", in, d.Transport)
			}
			if len(d.Headers) > 0 {
				fmt.Fprintf(&b, "%sheaders:\n", in)
				for _, h := range d.Headers {
					fmt.Fprintf(&b, "%s%s%s: %s\n", in, unit, q(h.Key), q(h.Value))
				}
			}
		} else {
			fmt.Fprintf(&b, "%scommand: %s\n", in, q(d.Command))
			if len(d.Args) > 0 {
				qs := make([]string, len(d.Args))
				for i, a := range d.Args {
					qs[i] = q(a)
				}
				fmt.Fprintf(&b, "%sargs: [%s]\n", in, strings.Join(qs, ", "))
			}
			if d.Cwd != "" {
				fmt.Fprintf(&b, "%scwd: %s\n", in, q(d.Cwd))
			}
			if len(d.Env) > 0 {
				fmt.Fprintf(&b, "%senv:\n", in)
				for _, kv := range d.Env {
					fmt.Fprintf(&b, "%s%s%s: %s\n", in, unit, q(kv.Key), q(kv.Value))
				}
			}
		}
		if d.TimeoutMs > 0 {
			fmt.Fprintf(&b, "%stimeoutMs: %d\n", in, d.TimeoutMs)
		}
	}
	return b.String()
}

// comment makes s safe as the text of a YAML comment line. Notes repeat
// the client file's own text (a field's or a server's name), and YAML ends
// a line at CR, NEL, LS and PS as well as LF: left raw, such a character
// would end the comment and let the file's text continue as declarations
// of its own. Every control, separator and invisible format character is
// written as an escape instead, so the comment reads as what it holds.
func comment(s string) string {
	ok := true
	for _, r := range s {
		if commentUnsafe(r) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !commentUnsafe(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func commentUnsafe(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError ||
		unicode.In(r, unicode.Zl, unicode.Zp, unicode.Cf)
}

// q double-quotes s for YAML.
func q(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	// The JSON encoder leaves NEL raw; inside a YAML double-quoted
	// scalar it is a line break, folded to a space when read back.
	return strings.ReplaceAll(strings.TrimRight(b.String(), "\n"), "\u0085", `\u0085`)
}
