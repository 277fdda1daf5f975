package config

import "strings"

// projectEnvRule refuses one env key (exact) or a family (prefix) in a
// project declaration.
type projectEnvRule struct {
	name   string
	prefix bool
	why    string
}

// Reasons, written for the person reading the diagnostic.
const (
	whyPath     = "it decides which program a name runs and what every program the server starts finds first"
	whyLoader   = "the dynamic loader and the C library read it, which injects code or data into every program the server runs"
	whyInterp   = "an interpreter reads it at startup to load code, options or modules (or a package manager to choose what it installs and runs)"
	whyShell    = "shells read it at startup or use it to split, find and run commands"
	whyExec     = "programs run the command it names (git, editors, pagers, password prompts)"
	whyHome     = "it moves the home or config directory, so programs read their startup files and settings from a place the repository chooses"
	whyTLS      = "it changes which TLS certificates are trusted or loads crypto modules, which lets traffic be read or code be loaded"
	whyToolchn  = "a build toolchain reads it to choose compilers, wrappers, flags or module sources, which runs code while building"
	whyInternal = "sluice and its launcher read it"
)

// projectEnvDeny is the deny-list for env keys set by project declarations:
// variables that change which program runs, or make an interpreter, the
// loader, a shell or a toolchain run code the declaration does not name.
// A project declaration is written by a repository, and trusting it must
// mean trusting its command, args and cwd — not whatever these variables
// make of them. User declarations may set them (the operator is the
// author); the launcher's own, smaller deny-list (loader and interpreter
// injection) applies to both scopes at spawn.
//
// The list is compared against the upper-cased key. Sources: ld.so(8),
// dyld(1), the environment sections of node, python, perl, ruby, java,
// php, lua, R, erl, dotnet, go, cargo, rustup and git manuals, bash(1),
// sh(1p), and the package managers npm, yarn, pnpm, bun, deno, pip, uv,
// pipenv, poetry, bundler, gem, maven and gradle.
var projectEnvDeny = []projectEnvRule{
	{"PATH", false, whyPath},

	{"LD_", true, whyLoader}, // LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...
	{"DYLD_", true, whyLoader},
	{"GCONV_PATH", false, whyLoader},
	{"GLIBC_TUNABLES", false, whyLoader},
	{"LOCPATH", false, whyLoader},
	{"NLSPATH", false, whyLoader},
	{"HOSTALIASES", false, whyLoader},
	{"RESOLV_HOST_CONF", false, whyLoader},

	// Node and JavaScript runtimes and package managers.
	{"NODE_OPTIONS", false, whyInterp},
	{"NODE_PATH", false, whyInterp},
	{"NODE_REPL_EXTERNAL_MODULE", false, whyInterp},
	{"NODE_V8_COVERAGE", false, whyInterp},
	{"NODE_REDIRECT_WARNINGS", false, whyInterp},
	{"NODE_ICU_DATA", false, whyInterp},
	{"NPM_CONFIG_", true, whyInterp},
	{"YARN_", true, whyInterp},
	{"PNPM_", true, whyInterp},
	{"COREPACK_", true, whyInterp},
	{"BUN_", true, whyInterp},
	{"DENO_", true, whyInterp},
	// Python and its package managers.
	{"PYTHONPATH", false, whyInterp},
	{"PYTHONHOME", false, whyInterp},
	{"PYTHONSTARTUP", false, whyInterp},
	{"PYTHONUSERBASE", false, whyInterp},
	{"PYTHONINSPECT", false, whyInterp},
	{"PYTHONWARNINGS", false, whyInterp}, // a warning category is imported by name
	{"PYTHONBREAKPOINT", false, whyInterp},
	{"PYTHONEXECUTABLE", false, whyInterp},
	{"PYTHONPLATLIBDIR", false, whyInterp},
	{"PYTHONPYCACHEPREFIX", false, whyInterp},
	{"VIRTUAL_ENV", false, whyInterp},
	{"CONDA_", true, whyInterp},
	{"PIP_", true, whyInterp},
	{"PIPX_", true, whyInterp},
	{"UV_", true, whyInterp},
	{"PIPENV_", true, whyInterp},
	{"POETRY_", true, whyInterp},
	// Perl, Ruby.
	{"PERL5OPT", false, whyInterp},
	{"PERL5LIB", false, whyInterp},
	{"PERLLIB", false, whyInterp},
	{"PERL5DB", false, whyInterp},
	{"PERL5SHELL", false, whyInterp},
	{"PERL_MB_OPT", false, whyInterp},
	{"PERL_MM_OPT", false, whyInterp},
	{"RUBYOPT", false, whyInterp},
	{"RUBYLIB", false, whyInterp},
	{"RUBYSHELL", false, whyInterp},
	{"GEM_PATH", false, whyInterp},
	{"GEM_HOME", false, whyInterp},
	{"GEMRC", false, whyInterp},
	{"BUNDLE_", true, whyInterp},
	// JVM and .NET.
	{"JAVA_TOOL_OPTIONS", false, whyInterp},
	{"_JAVA_OPTIONS", false, whyInterp},
	{"JDK_JAVA_OPTIONS", false, whyInterp},
	{"JAVA_OPTS", false, whyInterp},
	{"JAVA_HOME", false, whyInterp},
	{"CLASSPATH", false, whyInterp},
	{"MAVEN_OPTS", false, whyInterp},
	{"MAVEN_ARGS", false, whyInterp},
	{"GRADLE_OPTS", false, whyInterp},
	{"GRADLE_USER_HOME", false, whyInterp},
	{"DOTNET_STARTUP_HOOKS", false, whyInterp},
	{"DOTNET_ADDITIONAL_DEPS", false, whyInterp},
	{"DOTNET_SHARED_STORE", false, whyInterp},
	{"DOTNET_ROOT", false, whyInterp},
	{"CORECLR_", true, whyInterp},
	{"COR_", true, whyInterp},
	{"COMPLUS_", true, whyInterp},
	// Other interpreters.
	{"PHPRC", false, whyInterp},
	{"PHP_INI_SCAN_DIR", false, whyInterp},
	{"LUA_", true, whyInterp}, // LUA_INIT runs code; LUA_PATH, LUA_CPATH, versioned forms
	{"TCLLIBPATH", false, whyInterp},
	{"R_PROFILE", false, whyInterp},
	{"R_PROFILE_USER", false, whyInterp},
	{"R_ENVIRON", false, whyInterp},
	{"R_ENVIRON_USER", false, whyInterp},
	{"R_LIBS", false, whyInterp},
	{"R_LIBS_USER", false, whyInterp},
	{"ERL_LIBS", false, whyInterp},
	{"ERL_FLAGS", false, whyInterp},
	{"ERL_AFLAGS", false, whyInterp},
	{"ERL_ZFLAGS", false, whyInterp},
	{"ELIXIR_ERL_OPTIONS", false, whyInterp},
	{"JULIA_LOAD_PATH", false, whyInterp},
	{"JULIA_DEPOT_PATH", false, whyInterp},
	{"GUILE_LOAD_PATH", false, whyInterp},

	// Shells.
	{"BASH_ENV", false, whyShell},
	{"ENV", false, whyShell},
	{"BASH_FUNC_", true, whyShell},
	{"SHELLOPTS", false, whyShell},
	{"BASHOPTS", false, whyShell},
	{"PROMPT_COMMAND", false, whyShell},
	{"PS4", false, whyShell},
	{"IFS", false, whyShell},
	{"CDPATH", false, whyShell},
	{"GLOBIGNORE", false, whyShell},
	{"ZDOTDIR", false, whyShell},
	{"SHELL", false, whyShell},
	{"FPATH", false, whyShell},

	// Programs that run a command named by a variable.
	{"GIT_", true, whyExec}, // GIT_SSH_COMMAND, GIT_EXEC_PATH, GIT_CONFIG_*, GIT_ASKPASS, GIT_DIR ...
	{"SSH_ASKPASS", false, whyExec},
	{"SUDO_ASKPASS", false, whyExec},
	{"EDITOR", false, whyExec},
	{"VISUAL", false, whyExec},
	{"PAGER", false, whyExec},
	{"MANPAGER", false, whyExec},
	{"LESSOPEN", false, whyExec},
	{"LESSCLOSE", false, whyExec},
	{"BROWSER", false, whyExec},
	{"TERMINAL", false, whyExec},

	// Home and config directories.
	{"HOME", false, whyHome},
	{"XDG_", true, whyHome},
	{"INPUTRC", false, whyHome},
	{"CURL_HOME", false, whyHome},
	{"WGETRC", false, whyHome},
	{"NETRC", false, whyHome},
	{"GNUPGHOME", false, whyHome},
	{"KRB5_CONFIG", false, whyHome},

	// TLS trust and crypto modules.
	{"OPENSSL_CONF", false, whyTLS},
	{"OPENSSL_ENGINES", false, whyTLS},
	{"OPENSSL_MODULES", false, whyTLS},
	{"SSL_CERT_FILE", false, whyTLS},
	{"SSL_CERT_DIR", false, whyTLS},
	{"SSLKEYLOGFILE", false, whyTLS},
	{"NODE_EXTRA_CA_CERTS", false, whyTLS},
	{"NODE_TLS_REJECT_UNAUTHORIZED", false, whyTLS},
	{"REQUESTS_CA_BUNDLE", false, whyTLS},
	{"CURL_CA_BUNDLE", false, whyTLS},

	// Build toolchains (servers started with go run, cargo run, npx of a
	// package with native code ...).
	{"GOFLAGS", false, whyToolchn},
	{"GOENV", false, whyToolchn},
	{"GOTOOLCHAIN", false, whyToolchn},
	{"GOROOT", false, whyToolchn},
	{"GOPATH", false, whyToolchn},
	{"GOBIN", false, whyToolchn},
	{"GOCACHE", false, whyToolchn},
	{"GOMODCACHE", false, whyToolchn},
	{"GOPROXY", false, whyToolchn},
	{"GOSUMDB", false, whyToolchn},
	{"GONOSUMDB", false, whyToolchn},
	{"GONOSUMCHECK", false, whyToolchn},
	{"GOINSECURE", false, whyToolchn},
	{"GOPRIVATE", false, whyToolchn},
	{"GONOPROXY", false, whyToolchn},
	{"GOEXPERIMENT", false, whyToolchn},
	{"CGO_", true, whyToolchn},
	{"CC", false, whyToolchn},
	{"CXX", false, whyToolchn},
	{"CPP", false, whyToolchn},
	{"LD", false, whyToolchn},
	{"AR", false, whyToolchn},
	{"RUSTC", false, whyToolchn},
	{"RUSTC_WRAPPER", false, whyToolchn},
	{"RUSTC_WORKSPACE_WRAPPER", false, whyToolchn},
	{"RUSTFLAGS", false, whyToolchn},
	{"RUSTDOCFLAGS", false, whyToolchn},
	{"CARGO_", true, whyToolchn},
	{"RUSTUP_", true, whyToolchn},
	{"MAKEFLAGS", false, whyToolchn},
	{"MAKEFILES", false, whyToolchn},
	{"PKG_CONFIG_PATH", false, whyToolchn},

	{"SLUICE_", true, whyInternal},
}

// projectEnvDenied returns why a project declaration may not set key, or
// "" when it may.
func projectEnvDenied(key string) string {
	up := strings.ToUpper(key)
	for _, r := range projectEnvDeny {
		if r.prefix && strings.HasPrefix(up, r.name) || !r.prefix && up == r.name {
			return r.why
		}
	}
	return ""
}

// ProjectEnvDenied reports whether a project declaration may not set key
// in env, and why.
func ProjectEnvDenied(key string) (bool, string) {
	why := projectEnvDenied(key)
	return why != "", why
}
