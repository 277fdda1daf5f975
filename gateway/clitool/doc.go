// Package clitool turns declared argv templates over existing command-line
// programs into typed MCP tools. It owns the template language, the input
// schema subset (and the inputSchema it becomes), the validation and
// refusal rules applied to every call before anything runs, running each
// invocation through proc (its own process group, the servers' teardown,
// a timeout, a stdout cap, a per-tool concurrency limit) and turning the
// outcome into an MCP CallToolResult.
//
// It imports gateway/proc and nothing else of sluice; in particular never
// gateway/config (declarations arrive as the plain Spec), the gateway root,
// mcp or front. Policy on which programs may be argv[0] (no shells,
// launchers or inline-code interpreters) is the declaration reader's, as
// it is for a server's command; the operator's allow-list
// (SLUICE_ALLOW_COMMANDS, Spec.AllowCommands) is applied here.
//
// # The template language
//
// An argv is a list. argv[0] is the literal program (absolute path or bare
// name on PATH), resolved once, on the first call. Every other element is
// text in which {name} is replaced by the argument's value — an element may
// mix text and placeholders ("--max-count={limit}") — or exactly
// "{name...}", which expands an array into one element per item, or a
// nested list: an optional group, rendered only when every placeholder in
// its own elements has a value (a boolean: is true; an array: has items).
// Inside a group a boolean renders as nothing, so ["--all{all}"] and
// ["{all}", "--all"] both mean "--all when all is true"; outside a group
// it renders as true or false. "{{name}}" is the literal text {name}; any
// other brace is literal, so Go templates such as {{.Name}} need no
// escaping. Values are substituted as whole strings: never split on
// spaces, never globbed, never seen by a shell.
//
// # Why a value may not start with "-"
//
// A value in argv that starts with "-" can be read by the program as an
// option ("--output=/etc/passwd", "--upload-pack=..."), which turns a
// typed argument into a new capability. Such a value is refused unless a
// literal "--" element was rendered before it (the conventional end of
// options) or its input says allowDash: true. The rule applies to the
// value, wherever it sits in its element, so that it is easy to predict:
// a negative number needs allowDash too.
//
// # Why a value may not put "@" where some programs read a file
//
// Compilers and linkers (GCC, binutils, LLVM), the JDK tools, the .NET,
// Rust, Swift, Haskell and CUDA compilers and 7-Zip read an argument
// "@FILE" as the contents of FILE, wherever it appears and "--" or not,
// and pass the text after "-Wl," or "-J" on to a program that does the
// same; curl reads "@FILE" (and "name@FILE", "name=@FILE", "name=<FILE")
// in its data, form, header and write-out values as the file's bytes. A
// model-chosen "@/home/u/.ssh/id_rsa" would make the program read the key,
// and its complaints about the lines (their text) come back in the
// result's stderr lines, or curl sends it away. For those programs
// (responseFilePrograms, by base name, also when started through env,
// ccache, sudo, nice, timeout, xargs and similar wrappers) a value may not
// put "@" at the start of an element, right after "=" or ",", or right
// after a glued short option ("-d@FILE"); after one of curl's options
// that read files it may not hold "@" at all (nor "<" for -F). The rule is
// conservative: "-DX=@a" is refused for gcc although gcc would not read
// it. allowDash: true on the input lets its values through. Other
// programs are left alone, since "@me" (gh) and "@scope/pkg" (npm) are
// ordinary values there. The list of programs is best effort: one that is
// not on it, or started through a wrapper not known here, is not
// protected.
//
// # Why compile errors are checked once, not per call
//
// Compile checks everything that does not depend on a call's arguments:
// every placeholder names an input, every input is used, a placeholder
// outside a group always has a value (required or defaulted), an array is
// only ever expanded, a group has a placeholder to decide it, defaults and
// enum values satisfy their own input. A call can then fail only on its
// arguments, and that failure names the argument and the rule.
//
// # Why numbers are exact
//
// Bounds, defaults and arguments are compared as big rationals parsed from
// their JSON text, never through float64, and an integer renders as its
// exact decimal ("1e2" becomes "100"); a number renders as the text the
// caller sent. Exponents are bounded so a six-byte text cannot demand a
// megabyte rational.
//
// # Why waiting for a slot counts against the timeout
//
// maxConcurrent bounds the process groups one tool may have at once
// (default 4). A call that waits for a slot waits inside its own timeout,
// so a burst of calls queues instead of spawning without bound, and no call
// waits forever.
//
// # Why the exit status is a result and a bad stdout is an error
//
// A non-zero exit is something the model should see and can act on (git's
// "not a git repository"), so it is a result with isError and the last
// stderr lines. An oversized or unparsable stdout is a failure of the
// declaration's promise (the tool says output: json), so it is an error
// the caller reports as it reports any other.
package clitool
