package proc

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
)

// This file holds what Windows needs from this package that is pure
// string work — command resolution with PATHEXT, the refusal of shells
// and batch files, command-line quoting, the environment block — with no
// Windows API in it, so that its tests run on every platform.
// proc_windows.go calls it with the real file system.

// defaultPathext is Windows' own default when PATHEXT is unset.
const defaultPathext = ".COM;.EXE;.BAT;.CMD"

// maxWindowsCommandLine is CreateProcess's limit, in UTF-16 code units,
// terminating NUL included.
const maxWindowsCommandLine = 32767

// windowsLaunchers are programs that interpret a command string or a
// script, or start another program, on the declaration's behalf: cmd /c
// and PowerShell are Windows' shells, the others its script hosts and
// launchers. Compared against the lower-cased base name without its
// extension. (The declaration parser refuses shells by name on every
// platform; this is the check at spawn, against what the name resolved
// to.)
var windowsLaunchers = map[string]bool{
	"cmd": true, "command": true, "powershell": true, "pwsh": true, "powershell_ise": true,
	"wsl": true, "bash": true, "sh": true, "wscript": true, "cscript": true, "mshta": true,
	"rundll32": true, "conhost": true, "runas": true, "forfiles": true, "start": true,
}

// resolveWindows resolves cmd as this package does on Windows. cmd must
// be an absolute path (C:\dir\tool.exe, C:/dir/tool.exe or
// \\server\share\tool.exe) or a bare name, which is looked up in each
// absolute entry of pathList (";"-separated, entries may be quoted) with
// each extension of pathext (PATHEXT; Windows' default when empty)
// appended, unless the name already ends in one of them — the order
// Windows itself uses. The current directory is never searched. Only
// .exe and .com files are accepted: a .bat or .cmd file would be run
// through cmd.exe, with cmd's own parsing of every argument, and other
// PATHEXT entries name script hosts. Shells and launchers are refused by
// name. isFile reports whether a path names an existing regular file.
// Errors are *CommandError.
func resolveWindows(cmd, pathList, pathext string, isFile func(string) bool) (string, error) {
	invalid := func(why string) error {
		return &CommandError{Command: cmd, Reason: ReasonCommandInvalid, Err: fmt.Errorf("%w: %s", ErrCommandInvalid, why)}
	}
	if cmd == "" || strings.TrimSpace(cmd) != cmd {
		return "", invalid("empty or padded")
	}
	for _, r := range cmd {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(`"<>|*?`, r) {
			return "", invalid("it contains a character Windows does not allow in a file name")
		}
	}
	if isLauncher(cmd) {
		return "", &CommandError{Command: cmd, Reason: ReasonCommandShell, Err: ErrCommandNotAllowed}
	}
	if p, ok := winAbs(cmd); ok {
		if strings.Contains(p[2:], ":") {
			return "", invalid("a colon after the drive names an alternate data stream")
		}
		if err := winProgramKind(cmd, p); err != nil {
			return "", err
		}
		if !isFile(p) {
			return "", &CommandError{Command: cmd, Reason: ReasonCommandNotFound, Err: ErrCommandNotFound}
		}
		return p, nil
	}
	if strings.ContainsAny(cmd, `/\:`) {
		return "", invalid(`use an absolute path such as C:\Tools\tool.exe or a bare name, not a relative path`)
	}
	if strings.Trim(cmd, ".") == "" {
		return "", invalid("not a file name")
	}
	exts := parsePathext(pathext)
	cands := []string{cmd}
	if !slices.Contains(exts, strings.ToLower(winExt(cmd))) {
		cands = cands[:0]
		for _, e := range exts {
			cands = append(cands, cmd+e)
		}
	}
	for _, dir := range splitWindowsPathList(pathList) {
		d, ok := winAbs(dir)
		if !ok {
			continue
		}
		for _, c := range cands {
			p := strings.TrimSuffix(d, `\`) + `\` + c
			if !isFile(p) {
				continue
			}
			if err := winProgramKind(cmd, p); err != nil {
				return "", err
			}
			return p, nil
		}
	}
	return "", &CommandError{Command: cmd, Reason: ReasonCommandNotFound, Err: ErrCommandNotFound}
}

// isLauncher reports whether the base name of p (without extension, any
// case) is a shell or launcher.
func isLauncher(p string) bool {
	b := p[strings.LastIndexAny(p, `/\`)+1:]
	b = strings.TrimRight(b, ". ")
	if e := winExt(b); e != "" {
		b = b[:len(b)-len(e)]
	}
	return windowsLaunchers[strings.ToLower(b)]
}

// winProgramKind accepts p if Windows starts it directly (.exe, .com).
// Windows ignores trailing dots and spaces in file names, so "x.cmd."
// is x.cmd.
func winProgramKind(cmd, p string) error {
	switch strings.ToLower(winExt(strings.TrimRight(p, ". "))) {
	case ".exe", ".com":
		if strings.TrimRight(p, ". ") != p {
			return &CommandError{Command: cmd, Resolved: p, Reason: ReasonCommandNotProgram, Err: ErrCommandInvalid}
		}
		return nil
	case ".bat", ".cmd":
		return &CommandError{Command: cmd, Resolved: p, Reason: ReasonCommandBatch, Err: ErrCommandNotAllowed}
	}
	return &CommandError{Command: cmd, Resolved: p, Reason: ReasonCommandNotProgram, Err: ErrCommandInvalid}
}

// winExt is the extension of the last element of p, dot included.
func winExt(p string) string {
	b := p[strings.LastIndexAny(p, `/\`)+1:]
	if i := strings.LastIndexByte(b, '.'); i >= 0 {
		return b[i:]
	}
	return ""
}

// winAbs reports whether p is an absolute Windows path — a drive letter,
// colon and separator, or a UNC path \\server\share\... — and returns it
// with forward slashes turned into backslashes, repeated separators
// collapsed and "." and ".." elements resolved (never above the root).
// Device paths (\\?\, \\.\), drive-relative (C:x) and rooted (\x) paths
// are not absolute here.
func winAbs(p string) (string, bool) {
	q := strings.ReplaceAll(p, "/", `\`)
	var root, rest string
	switch {
	case len(q) >= 3 && isDriveLetter(q[0]) && q[1] == ':' && q[2] == '\\':
		root, rest = strings.ToUpper(q[:1])+`:\`, q[3:]
	case strings.HasPrefix(q, `\\`) && !strings.HasPrefix(q, `\\?\`) && !strings.HasPrefix(q, `\\.\`):
		parts := strings.SplitN(q[2:], `\`, 3)
		if len(parts) < 2 || parts[0] == "" || parts[1] == "" || parts[0] == "." || parts[0] == ".." || parts[1] == "." || parts[1] == ".." {
			return "", false
		}
		root = `\\` + parts[0] + `\` + parts[1] + `\`
		if len(parts) == 3 {
			rest = parts[2]
		}
	default:
		return "", false
	}
	var elems []string
	for _, e := range strings.Split(rest, `\`) {
		switch e {
		case "", ".":
		case "..":
			if len(elems) > 0 {
				elems = elems[:len(elems)-1]
			}
		default:
			elems = append(elems, e)
		}
	}
	return root + strings.Join(elems, `\`), true
}

func isDriveLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// parsePathext returns the lower-cased extensions of a PATHEXT value, in
// order, each with its dot; Windows' default when none is usable.
func parsePathext(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ";") {
		e = strings.ToLower(strings.TrimSpace(e))
		if len(e) < 2 || e[0] != '.' || strings.ContainsAny(e[1:], `./\:"`) || slices.Contains(out, e) {
			continue
		}
		out = append(out, e)
	}
	if len(out) == 0 && v != defaultPathext {
		return parsePathext(defaultPathext)
	}
	return out
}

// splitWindowsPathList splits a PATH value at semicolons, honouring
// double quotes around entries that contain one, and drops the quotes.
func splitWindowsPathList(v string) []string {
	var out []string
	var b strings.Builder
	quoted := false
	for _, r := range v {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ';' && !quoted:
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteRune(r)
		}
	}
	return append(out, b.String())
}

// windowsCommandLine joins argv into the single command line Windows
// passes to a new process, so that the Microsoft C runtime and
// CommandLineToArgvW split it back into exactly argv. argv[0] is parsed
// by different rules (no escapes: a quoted program name ends at the next
// quote), so it may not contain a quote. NUL cannot be passed at all.
func windowsCommandLine(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("no program name")
	}
	var b strings.Builder
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", fmt.Errorf("argument %d contains a NUL byte, which a Windows command line cannot carry", i)
		}
		if i == 0 {
			if strings.ContainsRune(a, '"') {
				return "", errors.New(`the program name contains a double quote`)
			}
			if a == "" || strings.ContainsAny(a, " \t") {
				b.WriteString(`"` + a + `"`)
			} else {
				b.WriteString(a)
			}
			continue
		}
		b.WriteByte(' ')
		appendWindowsArg(&b, a)
	}
	s := b.String()
	if n := len(utf16.Encode([]rune(s))); n >= maxWindowsCommandLine {
		return "", fmt.Errorf("the command line is %d UTF-16 units, over Windows' limit of %d", n, maxWindowsCommandLine-1)
	}
	return s, nil
}

// appendWindowsArg quotes one argument (after the program name): as is
// when it needs nothing, else in double quotes, where a quote is escaped
// with a backslash and the backslashes before a quote (or the closing
// quote) are doubled.
func appendWindowsArg(b *strings.Builder, a string) {
	if a != "" && !strings.ContainsAny(a, " \t\n\v\"") {
		b.WriteString(a)
		return
	}
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(a); i++ {
		c := a[i]
		switch c {
		case '\\':
			slashes++
			continue
		case '"':
			b.WriteString(strings.Repeat(`\`, 2*slashes+1))
		default:
			b.WriteString(strings.Repeat(`\`, slashes))
		}
		slashes = 0
		b.WriteByte(c)
	}
	b.WriteString(strings.Repeat(`\`, 2*slashes))
	b.WriteByte('"')
}

// splitWindowsCommandLine splits a command line the way the Microsoft C
// runtime does (2008 and later): the inverse of windowsCommandLine, used
// by its tests on every platform. (On Windows the tests also compare
// with CommandLineToArgvW itself.)
func splitWindowsCommandLine(s string) []string {
	var args []string
	i := 0
	// argv[0]: up to the next quote if it starts with one, else up to
	// whitespace; backslashes are literal.
	if strings.HasPrefix(s, `"`) {
		j := strings.IndexByte(s[1:], '"')
		if j < 0 {
			return []string{s[1:]}
		}
		args = append(args, s[1:1+j])
		i = 2 + j
	} else {
		j := strings.IndexAny(s, " \t")
		if j < 0 {
			return []string{s}
		}
		args = append(args, s[:j])
		i = j
	}
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return args
		}
		var b strings.Builder
		quoted := false
		for i < len(s) && (quoted || (s[i] != ' ' && s[i] != '\t')) {
			switch s[i] {
			case '\\':
				n := 0
				for i < len(s) && s[i] == '\\' {
					n++
					i++
				}
				if i < len(s) && s[i] == '"' {
					b.WriteString(strings.Repeat(`\`, n/2))
					if n%2 == 1 {
						b.WriteByte('"')
						i++
					}
				} else {
					b.WriteString(strings.Repeat(`\`, n))
				}
			case '"':
				if quoted && i+1 < len(s) && s[i+1] == '"' {
					b.WriteByte('"') // "" inside quotes: a literal quote
					i += 2
					continue
				}
				quoted = !quoted
				i++
			default:
				b.WriteByte(s[i])
				i++
			}
		}
		args = append(args, b.String())
	}
}

// windowsEnvBlock encodes env ("NAME=value" entries) as the UTF-16
// environment block CreateProcess takes: entries sorted by upper-cased
// name, as Windows expects; names compared without regard to case, the
// last of a duplicated name winning; each entry NUL-terminated, the block
// ended by a second NUL.
func windowsEnvBlock(env []string) ([]uint16, error) {
	type kv struct{ k, v string }
	var list []kv
	index := map[string]int{}
	for _, e := range env {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			continue
		}
		if strings.IndexByte(e, 0) >= 0 {
			return nil, fmt.Errorf("environment variable %q contains a NUL byte", k)
		}
		u := strings.ToUpper(k)
		if i, ok := index[u]; ok {
			list[i] = kv{k, v}
			continue
		}
		index[u] = len(list)
		list = append(list, kv{k, v})
	}
	slices.SortFunc(list, func(a, b kv) int { return strings.Compare(strings.ToUpper(a.k), strings.ToUpper(b.k)) })
	var out []uint16
	for _, e := range list {
		out = append(out, utf16.Encode([]rune(e.k+"="+e.v))...)
		out = append(out, 0)
	}
	if len(out) == 0 {
		out = append(out, 0)
	}
	return append(out, 0), nil
}

// WindowsAbs reports whether p is an absolute Windows path (a drive
// letter, colon and separator, or \\server\share\...; either separator)
// and returns its clean form with backslashes. It is pure string work, so
// configuration can be checked the way Windows will read it on any
// platform.
func WindowsAbs(p string) (string, bool) { return winAbs(p) }
