package config

import (
	"regexp"
	"strings"
	"sync"
)

// Caps. Each bounds one field; exactly at the cap is accepted, one over is a
// diagnostic.
const (
	MaxFileBytes     = 256 << 10 // bytes per mcp.yaml
	MaxServers       = 32        // servers per file
	MaxIDChars       = 32        // server id length
	MaxCommandBytes  = 512
	MaxArgs          = 64
	MaxArgBytes      = 4096
	MaxEnvEntries    = 64
	MaxEnvKeyBytes   = 256
	MaxEnvValueBytes = 4096
	MaxPassEnv       = 64
	MaxCwdBytes      = 512
	MaxTimeoutMs     = 900_000

	MinMaxLineBytes = 4 << 10  // smallest maxLineBytes a server may set
	MaxMaxLineBytes = 64 << 20 // largest maxLineBytes a server may set

	MaxApprove       = 256 // approve globs
	MaxGlobBytes     = 512 // one capability glob
	MaxFilters       = 32
	MaxModuleBytes   = 512 // filters[].module
	MaxConfigDepth   = 64  // nesting of filters[].config
	MaxFilterCapGlob = 64  // filters[].capabilities entries
)

// MaxFilterTimeout caps filters[].timeoutMs, a per-call deadline.
const MaxFilterTimeout = 60_000

var (
	// idRe is the server id grammar; "__" and a trailing "_" are
	// additionally forbidden because a capability is <id>__<tool>, split
	// at the first "__": the tool echo of a server a_ would be a___echo,
	// which names the tool _echo of server a.
	idRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`) })
	// envKeyRe is the grammar of declared env keys and passEnv names.
	envKeyRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`) })
	// envNameRe is the grammar of a referenced gateway variable in ${env:NAME}.
	envNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	// builtinRe is the grammar of NAME in "builtin:NAME".
	builtinRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`) })
	// sha256Re is a lowercase or uppercase hex SHA-256.
	sha256Re = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-fA-F]{64}$`) })
)

// ValidID reports whether id is a valid server id.
func ValidID(id string) bool {
	return idGrammar(id) && !containsDoubleUnderscore(id) && !strings.HasSuffix(id, "_")
}

// idGrammar is idRe().MatchString without compiling idRe: every load
// checks every server id, and most never print the pattern.
func idGrammar(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || i > 0 && (c == '_' || c == '-')) {
			return false
		}
	}
	return true
}

func containsDoubleUnderscore(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '_' && s[i+1] == '_' {
			return true
		}
	}
	return false
}

// shells are commands that interpret a command string or run another
// program on the declaration's behalf, bypassing the argv, env and cwd
// checks. Compared against the lowercased basename with any Windows
// executable extension and trailing version digits removed.
var shells = map[string]bool{
	// POSIX and other Unix shells
	"sh": true, "bash": true, "zsh": true, "fish": true, "dash": true, "ksh": true,
	"mksh": true, "pdksh": true, "oksh": true, "lksh": true, "ash": true, "hush": true,
	"yash": true, "posh": true, "csh": true, "tcsh": true, "rc": true, "es": true,
	"elvish": true, "nu": true, "nushell": true, "xonsh": true, "ion": true, "oil": true,
	"osh": true, "ysh": true, "rbash": true, "scsh": true,
	// Windows shells
	"cmd": true, "command": true, "powershell": true, "pwsh": true, "powershell_ise": true,
	"wsl": true, "bash.exe": true,
	// multi-call binaries that contain a shell
	"busybox": true, "toybox": true,
	// launchers that run another command given as arguments
	"env": true, "sudo": true, "doas": true, "su": true, "runuser": true, "pkexec": true,
	"run0": true, "nohup": true, "nice": true, "ionice": true, "chrt": true, "taskset": true,
	"timeout": true, "setsid": true, "stdbuf": true, "unbuffer": true, "script": true,
	"xargs": true, "flock": true, "chroot": true, "unshare": true, "nsenter": true,
	"sg": true, "newgrp": true, "time": true, "watch": true, "exec": true, "eval": true,
	"expect": true, "screen": true, "tmux": true, "osascript": true, "start": true,
	"systemd-run": true, "firejail": true, "bwrap": true,
}
