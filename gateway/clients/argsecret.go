package clients

import (
	"regexp"
	"strings"
	"sync"
)

// ArgSecret reports where args[i] holds a literal credential: the byte
// offset in args[i] at which the credential starts (0 when the whole
// argument is one), or -1 when it holds none. args is a command line;
// its first item may be the program, and the nearest program named before
// args[i] decides what a short flag means (-p is mysql's password and
// docker's port).
//
// A credential is found where SecretArg finds one (a flag named for a
// credential, a known token shape, --flag=VALUE and NAME=VALUE alike), in
// an HTTP header given as one argument (-H 'Authorization: Bearer ...',
// --header 'X-Api-Key: ...'), after a program's own password flag
// (mysql -pVALUE, sshpass -p VALUE, redis-cli -a VALUE, curl -u
// user:VALUE) and never in a value shaped like a port (-p 8080,
// -p 127.0.0.1:80:80), in NAME=VALUE as an env entry (PGPASSWORD=...),
// and in a command line a shell is given as one argument (sh -c '...').
//
// # Why a header's name and scheme stay
//
// "Authorization: Bearer (hidden)" tells a person what the argument is
// for and where the credential goes; only the credential is hidden.
func ArgSecret(args []string, i int) int {
	a := args[i]
	if off := shellSecret(args, i); off >= 0 {
		return off
	}
	if off := headerSecret(args, i); off != 0 {
		return off
	}
	if off := programSecret(args, i); off >= 0 {
		return off
	}
	if SecretArg(args, i) {
		if k, _, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			return len(k) + 1
		}
		return 0
	}
	// NAME=VALUE (an env entry given to a launcher: docker run -e
	// GITHUB_TOKEN=..., env PGPASSWORD=...) is judged like --NAME=VALUE
	// and like the env entry it is.
	if k, v, ok := strings.Cut(a, "="); ok && envName().MatchString(k) && !strings.HasPrefix(a, "-") && !plainName().MatchString(k) {
		if SecretArg([]string{"--" + k, v}, 1) || envSecret(k, v) {
			return len(k) + 1
		}
	}
	return -1
}

// envSecret: NAME=VALUE given as an argument holds a credential by the
// rule an env entry is hidden by (LooksSecret of a name that mentions
// one: PGPASSWORD, REDISCLI_AUTH, APITOKEN, whatever the value), except where
// the name says the value is a setting about one (MAX_TOKENS,
// TOKEN_FILE, AUTH_MODE, SESSION_TIMEOUT) or the value is a path.
func envSecret(k, v string) bool {
	if !secretName(k) || !LooksSecret(k, v) {
		return false // a value's shape alone is SecretArg's to judge
	}
	return !flagNotSecret().MatchString(k) && !envSetting().MatchString(k) && !strings.ContainsRune("/.~", rune(v[0]))
}

// envSetting: an env name whose last word says it holds a setting, not
// the credential its name mentions (AUTH_MODE, SESSION_TIMEOUT).
var envSetting = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[-_.])(mode|timeout|ttl|level|enabled|disabled|enable|disable|required|store|backend|provider|method|type|host|port|user|username|domain|region|version|scope|scopes|issuer|audience|endpoint|server|realm|strategy)$`)
})

// headerSecret: the offset of a credential in a header given as one
// argument, 0 when there is none (a header never starts at 0). The
// argument is a header when it follows a header flag (-H, --header) or
// is joined to one, or when it reads "Name: value" with the space.
func headerSecret(args []string, i int) int {
	a := args[i]
	base := 0
	after := i > 0 && headerFlag().MatchString(args[i-1])
	if f, v, ok := strings.Cut(a, "="); ok && headerFlag().MatchString(f) {
		a, base, after = v, len(f)+1, true
	} else if len(a) > 2 && strings.HasPrefix(a, "-H") {
		a, base, after = a[2:], 2, true // -HName:value, as curl takes it
	}
	name, val, ok := strings.Cut(a, ":")
	if !ok || !headerName().MatchString(name) || !secretName(name) {
		return 0
	}
	if !after && (!strings.HasPrefix(val, " ") || !credentialHeader(name)) {
		return 0 // 'Session: morning standup' is a title, not a header
	}
	off := base + len(name) + 1
	trimmed := strings.TrimLeft(val, " \t")
	off += len(val) - len(trimmed)
	if scheme, rest, ok := strings.Cut(trimmed, " "); ok && headerScheme().MatchString(scheme) {
		rest = strings.TrimLeft(rest, " ")
		off += len(trimmed) - len(rest)
		trimmed = rest
	}
	if trimmed == "" || refPat().MatchString(trimmed) {
		return 0 // Bot ${DISCORD_TOKEN}, session=${SID}, ${A}${B}: no literal
	}
	return off
}

// credentialHeader: a header name that carries a credential, so an
// argument reading "Name: value" with one is a header even with no
// header flag before it (X-Api-Key: ..., Authorization: ...).
func credentialHeader(name string) bool {
	switch strings.ToLower(name) {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	return strings.Contains(name, "-") && credentialFlag().MatchString(name)
}

// headerScheme: the scheme word of an Authorization value (Bearer,
// Basic, Bot, ApiKey, Digest, AWS4-HMAC-SHA256).
var headerScheme = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`) })

var (
	// headerFlag: a flag that takes an HTTP header as its value.
	headerFlag = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(-H|--?headers?|--http-header|--extra-header|--add-header)$`)
	})
	// headerName: an HTTP header's name.
	headerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`) })
	// portShape: what -p means for docker, ssh or a server: a port, a
	// range, host:port:port, with a protocol.
	portShape = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(\[[0-9a-fA-F:.]+\]:|[0-9.-]+:)*[0-9]+(-[0-9]+)?(/(tcp|udp|sctp))?$`)
	})
)

// passwordFlags names, for each program whose short flag takes a
// password, those flags. joined: the flag also takes its value joined to
// it (-pVALUE). user: the value is user:password, and only what follows
// the first colon is the credential.
var passwordFlags = map[string][]struct {
	flag         string
	joined, user bool
}{
	"mysql":         {{flag: "-p", joined: true}},
	"mysqladmin":    {{flag: "-p", joined: true}},
	"mysqldump":     {{flag: "-p", joined: true}},
	"mysqlimport":   {{flag: "-p", joined: true}},
	"mysqlshow":     {{flag: "-p", joined: true}},
	"mysqlcheck":    {{flag: "-p", joined: true}},
	"mysqlsh":       {{flag: "-p", joined: true}},
	"mariadb":       {{flag: "-p", joined: true}},
	"mariadb-dump":  {{flag: "-p", joined: true}},
	"mariadb-admin": {{flag: "-p", joined: true}},
	"sshpass":       {{flag: "-p", joined: true}},
	"redis-cli":     {{flag: "-a"}},
	"valkey-cli":    {{flag: "-a"}},
	"mongo":         {{flag: "-p"}},
	"mongosh":       {{flag: "-p"}},
	"mongodump":     {{flag: "-p"}},
	"mongorestore":  {{flag: "-p"}},
	"mongoexport":   {{flag: "-p"}},
	"mongoimport":   {{flag: "-p"}},
	"rabbitmqadmin": {{flag: "-p"}},
	"sqlcmd":        {{flag: "-P", joined: true}},
	"bcp":           {{flag: "-P", joined: true}},
	"mosquitto_pub": {{flag: "-P", joined: true}},
	"mosquitto_sub": {{flag: "-P", joined: true}},
	"ldapsearch":    {{flag: "-w", joined: true}},
	"ldapmodify":    {{flag: "-w", joined: true}},
	"ldapadd":       {{flag: "-w", joined: true}},
	"ldapdelete":    {{flag: "-w", joined: true}},
	"ldapwhoami":    {{flag: "-w", joined: true}},
	"curl":          {{flag: "-u", joined: true, user: true}, {flag: "--user", user: true}, {flag: "--proxy-user", user: true}, {flag: "-U", joined: true, user: true}},
	"smbclient":     {{flag: "-U", joined: true, user: true}, {flag: "--user", user: true}},
}

// programSecret: the offset of a password given to a program's own
// password flag, -1 when args[i] is none.
func programSecret(args []string, i int) int {
	prog := programBefore(args, i)
	if prog == "" {
		return -1
	}
	a := args[i]
	for _, f := range passwordFlags[prog] {
		val, off, glued := "", 0, false
		switch {
		case i > 0 && args[i-1] == f.flag:
			val = a
		case strings.HasPrefix(a, f.flag+"=") && strings.HasPrefix(f.flag, "--"):
			val, off = a[len(f.flag)+1:], len(f.flag)+1
		case f.joined && len(a) > len(f.flag) && strings.HasPrefix(a, f.flag) && !strings.HasPrefix(f.flag, "--"):
			val, off, glued = a[len(f.flag):], len(f.flag), true
		default:
			continue
		}
		// mysql's port is -P: its -pDIGITS is a password of digits.
		port := !f.user && !(glued && (strings.HasPrefix(prog, "mysql") || strings.HasPrefix(prog, "mariadb")))
		if val == "" || strings.HasPrefix(val, "-") || isRefOnly(val) || port && portShape().MatchString(val) {
			continue
		}
		if f.user {
			sep := ":"
			if prog == "smbclient" {
				sep = "%"
			}
			j := strings.Index(val, sep)
			if j < 0 || j == len(val)-1 || isRefOnly(val[j+1:]) {
				continue
			}
			off += j + 1
		}
		return off
	}
	return -1
}

// programBefore is the program named nearest before args[i] that has
// password flags: a word (not a flag's value) whose base name is one.
func programBefore(args []string, i int) string {
	for j := i - 1; j >= 0; j-- {
		base := programName(args[j])
		if _, ok := passwordFlags[base]; !ok {
			continue
		}
		if j > 0 && strings.HasPrefix(args[j-1], "-") && !strings.Contains(args[j-1], "=") && !noValueFlags[args[j-1]] {
			continue // --name mysql, -t mysql: a value, not the program
		}
		return base
	}
	return ""
}

// noValueFlags are flags seen before a program that take no value
// (docker exec -it mysql ..., kubectl exec pod -- mysql ...).
var noValueFlags = map[string]bool{"--": true, "-it": true, "-ti": true, "-y": true, "--rm": true, "--interactive": true, "--tty": true}

// programName is the program a command line's word names, as
// passwordFlags and shells know it: its base name in lowercase, without
// a Windows launcher's extension or a version (mysql8, mysql-8.0,
// MySQL.cmd, python3.12 are mysql, mysql, mysql, python).
func programName(word string) string {
	base := strings.ToLower(word[strings.LastIndexAny(word, `/\`)+1:])
	for _, ext := range []string{".exe", ".cmd", ".bat", ".com", ".ps1"} {
		base = strings.TrimSuffix(base, ext)
	}
	if v := strings.TrimRight(base, "0123456789.-"); v != "" {
		return v
	}
	return base
}

// shells are the programs that run a command line given as one argument
// (sh -c '...', cmd /c "...", pwsh -Command "...").
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "fish": true, "cmd": true, "powershell": true, "pwsh": true}

// shellSecret: the offset of a credential in a command line given to a
// shell as one argument (bash -c 'mysql -phunter2pw app'), judged word
// by word as the line it is; -1 when args[i] is none or holds none.
// What follows the credential in the line is hidden with it.
func shellSecret(args []string, i int) int {
	if i < 2 || !strings.ContainsAny(args[i], " \t") {
		return -1
	}
	flag := args[i-1]
	switch {
	case strings.EqualFold(flag, "/c"), strings.EqualFold(flag, "/k"), strings.EqualFold(flag, "-command"):
	case len(flag) >= 2 && flag[0] == '-' && flag[1] != '-' && strings.Trim(flag[1:], "abcdefghijklmnopqrstuvwxyz") == "" && strings.Contains(flag, "c"):
	default:
		return -1
	}
	j := i - 2
	for j > 0 && (strings.HasPrefix(args[j], "-") || len(args[j]) == 2 && args[j][0] == '/') {
		j-- // sh -e -c, cmd /d /c
	}
	if !shells[programName(args[j])] {
		return -1
	}
	words, at := shellWords(args[i])
	for k := range words {
		if off := ArgSecret(words, k); off >= 0 {
			if off < len(at[k]) {
				return at[k][off]
			}
			return at[k][0]
		}
	}
	return -1
}

// shellWords splits a shell's command line into its words, with, for
// each byte of a word, where it is in line. Quotes ('...', "...") and a
// backslash escape are taken away as a shell takes them.
func shellWords(line string) (words []string, at [][]int) {
	var w []byte
	var pos []int
	in := false
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == 0 && (c == ' ' || c == '\t' || c == '\n'):
			if in {
				words, at = append(words, string(w)), append(at, pos)
				w, pos, in = nil, nil, false
			}
			continue
		case quote == 0 && (c == '\'' || c == '"'):
			quote, in = c, true
			continue
		case quote != 0 && c == quote:
			quote = 0
			continue
		case c == '\\' && quote != '\'' && i+1 < len(line):
			i++
			c = line[i]
		}
		w, pos, in = append(w, c), append(pos, i), true
	}
	if in {
		words, at = append(words, string(w)), append(at, pos)
	}
	return words, at
}
