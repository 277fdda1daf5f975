package clients

import (
	"path/filepath"
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
// -p 127.0.0.1:80:80).
//
// # Why a header's name and scheme stay
//
// "Authorization: Bearer (hidden)" tells a person what the argument is
// for and where the credential goes; only the credential is hidden.
func ArgSecret(args []string, i int) int {
	a := args[i]
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
	// GITHUB_TOKEN=..., env PGPASSWORD=...) is judged like an env entry
	// and like --NAME=VALUE.
	if k, v, ok := strings.Cut(a, "="); ok && envName().MatchString(k) && !strings.HasPrefix(a, "-") {
		if LooksSecret(k, v) || SecretArg([]string{"--" + k, v}, 1) {
			return len(k) + 1
		}
	}
	return -1
}

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
	}
	name, val, ok := strings.Cut(a, ":")
	if !ok || !headerName().MatchString(name) || !secretName().MatchString(name) {
		return 0
	}
	if !after && !strings.HasPrefix(val, " ") {
		return 0
	}
	off := base + len(name) + 1
	trimmed := strings.TrimLeft(val, " \t")
	off += len(val) - len(trimmed)
	for _, scheme := range []string{"Bearer ", "bearer ", "Basic ", "basic ", "Token ", "token "} {
		if strings.HasPrefix(trimmed, scheme) {
			rest := strings.TrimLeft(trimmed[len(scheme):], " ")
			off += len(trimmed) - len(rest)
			trimmed = rest
			break
		}
	}
	if trimmed == "" || isRefOnly(trimmed) {
		return 0
	}
	return off
}

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
	"sqlcmd":        {{flag: "-P"}},
	"bcp":           {{flag: "-P"}},
	"mosquitto_pub": {{flag: "-P"}},
	"mosquitto_sub": {{flag: "-P"}},
	"ldapsearch":    {{flag: "-w"}},
	"ldapmodify":    {{flag: "-w"}},
	"ldapadd":       {{flag: "-w"}},
	"ldapdelete":    {{flag: "-w"}},
	"ldapwhoami":    {{flag: "-w"}},
	"curl":          {{flag: "-u", joined: true, user: true}, {flag: "--user", user: true}, {flag: "--proxy-user", user: true}, {flag: "-U", user: true}},
	"smbclient":     {{flag: "-U", joined: true, user: true}},
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
		val, off := "", 0
		switch {
		case i > 0 && args[i-1] == f.flag:
			val = a
		case strings.HasPrefix(a, f.flag+"=") && strings.HasPrefix(f.flag, "--"):
			val, off = a[len(f.flag)+1:], len(f.flag)+1
		case f.joined && len(a) > len(f.flag) && strings.HasPrefix(a, f.flag) && !strings.HasPrefix(f.flag, "--"):
			val, off = a[len(f.flag):], len(f.flag)
		default:
			continue
		}
		if val == "" || strings.HasPrefix(val, "-") || isRefOnly(val) || !f.user && portShape().MatchString(val) {
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
		base := strings.ToLower(strings.TrimSuffix(filepath.Base(args[j]), ".exe"))
		if _, ok := passwordFlags[base]; !ok {
			continue
		}
		if j > 0 && strings.HasPrefix(args[j-1], "-") && !strings.Contains(args[j-1], "=") && len(args[j-1]) > 2 {
			continue // --name mysql: a value, not the program
		}
		return base
	}
	return ""
}
