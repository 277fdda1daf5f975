// Package config owns the strict YAML declarations of MCP servers and the
// user-scope settings: where the files live (ConfigDir, CacheDir, StateDir,
// ProjectRoot), how they are parsed and capped (Parse, Load), and the
// declaration digest that trust records bind to (Server.Digest,
// Server.FieldDigests).
//
// It is the only package that imports gopkg.in/yaml.v3, and no yaml type
// appears in its API. It must never import the gateway root, trust, catalog,
// mcp, front, sandbox or wasm: it reads files and returns plain values. Its
// imports of sluice are gateway/clitool, for the cli block (below), and
// gateway/remote, for the URL rules of remote servers (one definition of
// what a server URL may be).
//
// Two files are read, both optional: the user file <config dir>/mcp.yaml
// (trusted by authorship) and the project file <project root>/.sluice/mcp.yaml
// (checked into a repository; nothing in it runs until the operator records
// trust). Every problem is a Diagnostic with file, line, column, field path,
// message and fix; Load never fails as a whole.
//
// # Why expose and tools are not bound by the digest
//
// A server's tools: subset and expose: list change how its tools are
// listed to an agent, never what the server runs or may do: tools: only
// hides, and expose: can only pick among the tools the gateway lists
// anyway (trusted, visible, not held). Binding them would make every
// edit of a listing preference invalidate a trust record.
//
// # Why walk yaml.Node trees instead of decoding into structs
//
// Decoding with KnownFields stops at the first problem and reports it as a
// string. Walking the node tree gives every diagnostic its own position and
// field path, lets one bad server be dropped while its neighbours load, and
// lets the parser refuse things a struct decoder silently accepts: duplicate
// keys, aliases and merge keys, numbers where strings belong (`PORT: 8080`
// must be quoted, so the digest never depends on a number's spelling).
//
// # Why a malformed file contributes nothing
//
// A syntax error, a second document, a non-mapping top level, a NUL byte or
// an oversized file means we cannot be sure what the author meant, so the
// file fails closed. A bad server inside a good file is a local problem and
// drops only that server; a bad setting drops only that setting and is listed
// in Settings.Invalid so the gateway can refuse to run without, say, a
// redaction filter the operator thought was active.
//
// # Why shells and launchers are refused
//
// MCP servers are programs speaking JSON-RPC on stdio; none needs a shell.
// A shell (or env, sudo, xargs, nohup ...) would run whatever its arguments
// say, bypassing the argv, env and cwd checks, and would make a declaration's
// digest describe the launcher rather than what actually runs. Commands are
// an absolute path or a bare program name; `./x` and `a/b` are refused
// because their meaning depends on the working directory.
//
// An interpreter given program text on its command line (python3 -c,
// node -e/--eval/-p, perl -e, ruby -e, php -r, lua -e, deno eval, bun -e
// ...), a program whose operand is code (awk, sed), find -exec, a package
// launcher asked for a shell command line or a package.json script (npx
// -c, npm run) and a launcher whose inner program is any of these (npx
// bash -c, uv run python -c) are the same thing under another name, and
// are refused the same way (CommandProblem). Names are compared without
// version suffixes (python3.12, node22), and once the command is resolved
// every symlink is followed and the file is compared with the installed
// shells (CheckProgram): /usr/local/bin/tool linking to bash is bash. This
// is a deny-list, so it cannot be complete; the operator's allow-list
// (SLUICE_ALLOW_COMMANDS) is the positive control.
//
// # Why the command is resolved on the gateway's PATH, and bound by trust
//
// A bare name such as `node` means whatever the first PATH entry holding
// it says. Resolving it on a PATH the declaration sets would let a
// repository run its own `node` under an allowed name, so Load resolves
// every command on the gateway's PATH (Server.Program) and the gateway
// launches exactly that path. Program is not in the digest (it depends on
// the machine, not the declaration); trust records bind it separately.
//
// # Why project declarations may not set PATH, loader or interpreter variables
//
// Trusting a project declaration means trusting its command, args and cwd.
// PATH, LD_*, DYLD_*, NODE_OPTIONS, PYTHONPATH, GIT_*, HOME, XDG_* and the
// rest of projectEnvDeny change what those run — which program a name
// finds, code loaded before main, startup files and settings read from a
// place the repository chooses — so a project env key on that list is an
// error at its own line and the server does not load. User declarations
// may set them: the operator is the author.
//
// # Why relative SLUICE_HOME and SLUICE_CACHE_DIR are refused
//
// A relative override means a different directory in every working
// directory. SLUICE_HOME=.sluice inside a repository would make the
// repository's .sluice/mcp.yaml the user file, trusted by authorship; a
// relative cache would let a repository ship tool catalogs and compiled
// filter code. Both are errors (OverrideError), never resolved against the
// working directory. Relative XDG_* and HOME values are ignored, as the
// XDG specification says.
//
// # Why passEnv is part of the digest
//
// The digest binds every field that changes what runs or what it can see.
// passEnv hands gateway variables (tokens, agent sockets) to the server, so
// adding a name to it must make an existing trust record stale, exactly like
// adding an env entry. actionClass, stdoutNoise and maxLineBytes are not in
// the digest: they change how the gateway treats the server, not the server.
//
// # Why env references stay unexpanded in the digest
//
// `${env:NAME}` is digested as written so that rotating a token does not
// invalidate trust and the digest never depends on, or leaks, a secret.
// Expansion happens at launch (ExpandEnv), and a missing variable is an
// error naming the server, key and variable, never a value.
//
// # Why a discovered project of another user is skipped
//
// The project root is found by walking up from the working directory, so a
// directory other users can write (a shared /tmp) can hold a .sluice above
// this user's work. Its servers would not launch untrusted, but they would
// be listed, with remedies (`sluice trust ...`) that an agent may follow.
// A discovered .sluice directory or file owned by another user (not root)
// is skipped with a warning, as git refuses a repository of another owner;
// --project DIR takes one on purpose (unix; ownership is not checked on
// Windows).
//
// # Why project cwd is checked here and again at launch
//
// The check here (Contain: lexical, then every symlink resolved) gives the
// operator a file position before anything runs. The launcher checks again
// at spawn, because the filesystem can change between the two; a cwd that
// does not exist yet is a warning here and an error there.
//
// # Why a cli block is compiled here
//
// A server may be a cli block: tools that are argv templates over an
// existing program (see package clitool). The template language, its
// schema subset and its rules belong to clitool, which runs the tools;
// checking them a second time here would mean two parsers that can
// disagree. So the parser builds the clitool.Spec and calls
// clitool.Compile, and maps the error's field path back to the YAML node
// that wrote it: a bad template is a diagnostic with file and line that
// drops its server, like every other declaration problem. Compile runs
// nothing and resolves nothing. argv[0] gets the rules of a server's
// command (no shells or launchers), and an interpreter handed inline code
// (python -c, node -e, awk) is refused. The whole block is in the digest,
// descriptions included: what a tool tells the model can change what the
// model does. A server without a cli block digests exactly as before, so
// existing trust records stay valid.
//
// # Why a remote server's headers are digested as written
//
// A url server's headers usually carry a credential reference
// ("Bearer ${env:TOKEN}"). The digest binds the reference text, like env,
// so rotating the token does not invalidate trust, while pointing the
// header at another variable, adding a header, or changing the URL,
// transport, timeout or oauth block does. allowPrivate, which lets the SSRF
// guard pass loopback and private addresses, exists only in user scope: a
// project file is written by someone else, and reaching the operator's
// local network is exactly what it must never be able to ask for. A
// literal clientSecret or privateKey in a project file is an error for the
// same reason a literal credential leaks: everyone who clones it has it.
package config
