package proc

import (
	"slices"
	"strings"
)

// safeNames are copied from the gateway's own environment into every child.
var safeNames = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "TERM"}

// safePrefixes are copied too: locale categories and XDG base directories.
var safePrefixes = []string{"LC_", "XDG_"}

// denyRule refuses a name (exact) or a family (prefix), compared
// case-insensitively: a refusal must not hinge on the spelling, and some
// tools (npm) read lower-case variants.
type denyRule struct {
	name   string
	prefix bool
	reason string
}

var denyRules = []denyRule{
	// Dynamic loaders: code injected into every program the server runs.
	{"LD_", true, ReasonEnvDeniedLoader}, // LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...
	{"DYLD_", true, ReasonEnvDeniedLoader},
	{"GCONV_PATH", false, ReasonEnvDeniedLoader},
	{"GLIBC_TUNABLES", false, ReasonEnvDeniedLoader},
	{"LOCPATH", false, ReasonEnvDeniedLoader},
	// .NET profilers: a DLL (or shared object) loaded into every .NET
	// program, on Windows and elsewhere.
	{"COR_ENABLE_PROFILING", false, ReasonEnvDeniedLoader},
	{"COR_PROFILER", true, ReasonEnvDeniedLoader}, // COR_PROFILER, COR_PROFILER_PATH, ...
	{"CORECLR_ENABLE_PROFILING", false, ReasonEnvDeniedLoader},
	{"CORECLR_PROFILER", true, ReasonEnvDeniedLoader},
	// Interpreters and package managers: startup code, module search paths,
	// registry and script settings.
	{"NODE_OPTIONS", false, ReasonEnvDeniedInterp},
	{"NODE_PATH", false, ReasonEnvDeniedInterp},
	{"NODE_REPL_EXTERNAL_MODULE", false, ReasonEnvDeniedInterp},
	{"NPM_CONFIG_", true, ReasonEnvDeniedInterp},
	{"YARN_", true, ReasonEnvDeniedInterp},
	{"BUN_", true, ReasonEnvDeniedInterp},
	{"DENO_", true, ReasonEnvDeniedInterp},
	{"PYTHONPATH", false, ReasonEnvDeniedInterp},
	{"PYTHONHOME", false, ReasonEnvDeniedInterp},
	{"PYTHONSTARTUP", false, ReasonEnvDeniedInterp},
	{"PYTHONUSERBASE", false, ReasonEnvDeniedInterp},
	{"PYTHONINSPECT", false, ReasonEnvDeniedInterp},
	{"PIP_", true, ReasonEnvDeniedInterp},
	{"UV_", true, ReasonEnvDeniedInterp},
	{"PERL5OPT", false, ReasonEnvDeniedInterp},
	{"PERL5LIB", false, ReasonEnvDeniedInterp},
	{"PERLLIB", false, ReasonEnvDeniedInterp},
	{"PERL5DB", false, ReasonEnvDeniedInterp},
	{"RUBYOPT", false, ReasonEnvDeniedInterp},
	{"RUBYLIB", false, ReasonEnvDeniedInterp},
	{"JAVA_TOOL_OPTIONS", false, ReasonEnvDeniedInterp},
	{"_JAVA_OPTIONS", false, ReasonEnvDeniedInterp},
	{"JDK_JAVA_OPTIONS", false, ReasonEnvDeniedInterp},
	{"DOTNET_STARTUP_HOOKS", false, ReasonEnvDeniedInterp},
	// Shells: files sourced or functions imported at startup.
	{"BASH_ENV", false, ReasonEnvDeniedShell},
	{"ENV", false, ReasonEnvDeniedShell},
	{"BASH_FUNC_", true, ReasonEnvDeniedShell},
	{"SHELLOPTS", false, ReasonEnvDeniedShell},
	{"BASHOPTS", false, ReasonEnvDeniedShell},
	{"PROMPT_COMMAND", false, ReasonEnvDeniedShell},
	{"PS4", false, ReasonEnvDeniedShell},
	{"IFS", false, ReasonEnvDeniedShell},
	{"CDPATH", false, ReasonEnvDeniedShell},
	{"ZDOTDIR", false, ReasonEnvDeniedShell},
	// This package's own control variables.
	{"SLUICE_PROC_", true, ReasonEnvDeniedInternal},
}

// deniedReason returns the refusal reason for name, or "".
func deniedReason(name string) string {
	up := strings.ToUpper(name)
	for _, r := range denyRules {
		if r.prefix && strings.HasPrefix(up, r.name) || !r.prefix && up == r.name {
			return r.reason
		}
	}
	return ""
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func isSafeName(name string) bool {
	if envNamesFoldCase {
		// Windows: names are case-insensitive ("Path" is PATH).
		for _, n := range safeNames {
			if strings.EqualFold(n, name) {
				return true
			}
		}
		for _, n := range platformSafeNames {
			if strings.EqualFold(n, name) {
				return true
			}
		}
		for _, p := range safePrefixes {
			if len(name) > len(p) && strings.EqualFold(name[:len(p)], p) {
				return true
			}
		}
		return false
	}
	if slices.Contains(safeNames, name) || slices.Contains(platformSafeNames, name) {
		return true
	}
	for _, p := range safePrefixes {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			return true
		}
	}
	return false
}

// setEnv sets k in m; where names are case-insensitive (Windows) it first
// drops every other spelling of k, so a declared PATH replaces an
// inherited Path instead of standing beside it.
func setEnv(m map[string]string, k, v string) {
	if envNamesFoldCase {
		for old := range m {
			if old != k && strings.EqualFold(old, k) {
				delete(m, old)
			}
		}
	}
	m[k] = v
}

// BuildEnv returns the environment for a child: the safe-list of parent
// (PATH, HOME, USER, LOGNAME, LANG, LC_*, TZ, TMPDIR, TERM, XDG_*), plus
// the names in pass copied from parent, with declared laid over both.
// parent is in os.Environ form. Names on the deny-list are refused even
// when declared or passed, and so are malformed names: the first refusal
// (declared names in sorted order, then pass in order) is returned as an
// *EnvError; nothing is dropped silently. A safe-listed parent variable
// that is itself malformed or denied is simply not copied. The result is
// sorted by name.
func BuildEnv(declared map[string]string, pass []string, parent []string) ([]string, error) {
	names := make([]string, 0, len(declared))
	for k := range declared {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if err := checkName(k, "env"); err != nil {
			return nil, err
		}
		if strings.IndexByte(declared[k], 0) >= 0 {
			return nil, &EnvError{Name: k, Source: "env", Reason: ReasonEnvInvalidValue, Err: ErrEnvInvalid}
		}
	}
	for _, k := range pass {
		if err := checkName(k, "passEnv"); err != nil {
			return nil, err
		}
	}

	parentMap := make(map[string]string, len(parent))
	for _, kv := range parent {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		parentMap[k] = v // later entries win, as in the C library
	}
	out := map[string]string{}
	for k, v := range parentMap {
		if isSafeName(k) && validEnvName(k) && deniedReason(k) == "" && strings.IndexByte(v, 0) < 0 {
			setEnv(out, k, v)
		}
	}
	for _, k := range pass {
		if v, ok := lookupEnvMap(parentMap, k); ok && strings.IndexByte(v, 0) < 0 {
			setEnv(out, k, v)
		}
	}
	for _, k := range names {
		setEnv(out, k, declared[k])
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		env = append(env, k+"="+out[k])
	}
	return env, nil
}

func checkName(name, source string) error {
	if !validEnvName(name) {
		return &EnvError{Name: name, Source: source, Reason: ReasonEnvInvalidName, Err: ErrEnvInvalid}
	}
	if r := deniedReason(name); r != "" {
		return &EnvError{Name: name, Source: source, Reason: r, Err: ErrEnvDenied}
	}
	return nil
}

// lookupEnv finds name in an environment list (last entry wins; any
// spelling on Windows).
func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && (k == name || envNamesFoldCase && strings.EqualFold(k, name)) {
			return v, true
		}
	}
	return "", false
}

// lookupEnvMap finds name in m (any spelling on Windows).
func lookupEnvMap(m map[string]string, name string) (string, bool) {
	if v, ok := m[name]; ok || !envNamesFoldCase {
		return v, ok
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}
