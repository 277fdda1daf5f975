// Package sandbox runs code-mode scripts: Starlark programs that call MCP
// tools as functions, under hard limits. It owns the script dialect, the
// built-ins, JSON <-> Starlark conversion, tool argument checks against
// input schemas, tool signatures for discovery, the static pre-flight and
// every run limit.
//
// It is a leaf: it imports no package of sluice, and it is the only
// importer of go.starlark.net, whose types never appear in its API (a
// Result holds JSON). The gateway wires it in through the small Host
// interface; the sandbox knows nothing of MCP transports, trust or filters.
//
// # Script contract
//
// Each server is a module named after its mangled id (see Ident and
// Mangle) and each tool a function taking keyword arguments, or one dict:
//
//	rows = db.query(sql="select 1")
//	text = fs.read_text_file({"path": "a.txt"})
//
// Arguments are converted to JSON and checked against the tool's input
// schema first (required, unknown names, type, enum, items; draft-07 and
// 2020-12). A tool returns its structuredContent when present; else its
// text (one text item is a str, several a list of str); else the list of
// content dicts. A result with isError true raises an error of kind tool
// carrying the tool's message.
//
// Errors as values: call("db__query", {"sql": "..."}) (or call(db.query,
// sql=...)) returns struct(ok, value, error, kind, content) and raises only
// when a run limit is hit. parallel(calls, limit=8) runs a list of
// {"tool": t, "args": {...}} dicts (or {"capability": t, "arguments":
// {...}}, the call tool's spelling) or (t, args) tuples on goroutines, at
// most limit at once (capped by Limits.MaxConcurrency) and never more per
// server than Host.MaxConcurrency; results come back in input order as
// call() structs. The Starlark thread itself stays single-threaded: it waits.
//
// The script assigns `result`; print() goes to a bounded log; json.encode
// and json.decode follow the number rule below; elapsed_ms(), group_by(),
// struct() and Starlark's own built-ins (sorted, max(key=), ...) are there.
// There is no load(), no file, network or clock access besides elapsed_ms.
// The dialect allows top-level if/for/while, while loops, reassigned
// globals and recursion (bounded by MaxDepth).
//
// Numbers: integers are exact at any size; a number with a fraction or an
// exponent becomes a float only if the float prints back to the same
// decimal value; otherwise it becomes {"$literal": "<source text>"}, which
// is written back verbatim when converted to JSON. An object of exactly
// that shape is therefore reserved: it always stands for its number.
//
// # Why a syntax-tree rewrite for memory
//
// starlark-go has no memory accounting, and the allocations that hurt
// happen inside one operation before any hook can run: `s + s` on a 2 GiB
// string allocates 4 GiB in a single step, and `",".join([s] * 1000)`,
// `str(x)` of a value that shares itself, `"%s" % (l,)` or s.replace()
// can each allocate gigabytes while the interpreter is inside a built-in
// that never looks at cancellation. Sampling the heap cannot stop those in
// time, so before compiling we rewrite the script's syntax tree: `x + y`,
// `x * y`, `x % y` and `x | y` become calls of hidden built-ins named "<op>"
// (not identifiers, so a script cannot call or shadow them), `x += y`,
// `x *= y` and `x |= y` pass the right side through "<op=>" and `x %= y`
// becomes x = <op>(x % y) (a target that is not a name or an index of
// names, d[k()] or l[len(l) - 1], has its operands evaluated first into
// hidden variables, so the check can read it again), every slice x[a:b:c]
// goes through "<slice>" (starlark-go's index rules; a stepped slice is
// charged and built in one allocation), and the
// methods join, replace, format, split, rsplit, splitlines, extend, update,
// the case copies upper, lower, title and capitalize, a dict's items, keys
// and values, and the lazy views elems, codepoints, elem_ords and
// codepoint_ords (whose materialization happens inside one built-in that
// cannot be sized later) go through "<method>". json.decode and tool
// results count what the values they build take as they are decoded and
// stop at the budget. str, repr, bytes, list, tuple, sorted, reversed,
// enumerate, zip, print and json.encode are charged the same way. Each estimates the bytes the result
// will take from its operands (string and bytes lengths, 32 bytes per list
// element, 64 per dict entry, the largest argument again for each
// directive of % or format that names its argument, a bounded walk for
// str/repr/format/encode
// that stops as soon as it passes the budget, so even a value that shares
// itself 2^30 times costs at most the budget in work) and refuses with a
// `limit` error naming `memory` when the estimate plus the run's current
// heap growth would pass MaxMemoryBytes. Nothing is allocated before the
// check, and what is then allocated stays within the charge: join, str,
// repr and the rendering of a container for % or format build their text
// in one buffer sized up front (starlark-go's grow piece by piece: five
// times the result allocated, a 100 MB join peaked at 1.6 times the
// 256 MiB cap), a string's escapes are counted (repr of "\x00" * n is four
// times n), json.encode is charged its buffer and the string copied from
// it, % and str.format are built in one buffer of their size
// (percent.go, format.go) and charged that plus the rendered containers
// (a form they leave to starlark-go, three times its result, its
// growth at its peak; TestOpsAllocateWithinTheCap counts every byte
// allocated). What is built to a size not known up front is charged as
// it is built (grow.go): list, tuple, sorted, reversed, enumerate, zip
// and list.extend gather an iterable with no length (s.codepoints())
// chunk by chunk, each chunk charged before it is made; join of anything
// but a list or tuple is one pass into a doubling buffer, each growth
// charged; dict() of n pairs is made at its length when that fits;
// dict.update and list.append charge their value's next growth every
// 4,096 elements (TestGrowingBuiltinsWithinTheCap).
//
// # Why built-ins walk values themselves
//
// starlark-go checks Thread.Cancel only between steps, and one step can
// be a built-in that walks a value in Go for minutes: str() of a list
// nested a million deep (its cycle check makes printing quadratic in the
// depth), `==` or sorted() over lists that share their parts (x = [l] *
// 1000 three times over is a billion comparisons in a few kilobytes),
// or hashing a tuple that shares itself (t = (t, t) sixty times). Such
// a run ignored its timeout, its memory limit and SIGTERM. So the
// sandbox does those walks itself (values.go): str, repr, print, fail,
// % and str.format (container arguments are rendered first), json.encode,
// the comparison operators and `in` (rewritten to the hidden built-in
// "<cmp>" unless one side is a number or string literal), sorted, min,
// max, all, any, list.index and list.remove. Every walk refuses values
// nested deeper than MaxValueDepth (200, the JSON bound) with a `limit`
// error naming valueDepth, and looks at the run's cancellation every 256
// values, so the wall clock and the caller's cancellation end a run
// within milliseconds even inside one built-in. Results and error
// messages are starlark-go's (TestRewritePreservesSemantics compares
// them), except that comparisons reach MaxValueDepth instead of
// starlark-go's 10 and a struct inside a list that holds it prints as
// `[...]` instead of recursing forever.
//
// Hashing cannot be interrupted, since the dict calls Hash itself. So a
// key is sized before it reaches a dict: index expressions and dict
// literal keys pass through the hidden "<key>" (literals and plain
// strings and numbers skip it), and dict(), dict.get/pop/setdefault/
// update, group_by and `in` size theirs; a tuple or struct key with more
// than MaxKeyParts (65,536) parts, shared parts counted each time, is a
// `limit` error naming keySize. dict(), dict.update and group_by look at
// the cancellation after every insert: ints equal in their low 32 bits
// share starlark-go's hash, so one call inserting 20,000 of them is
// quadratic. reversed, enumerate and zip are charged for the list they
// build before they allocate it. int() refuses digit strings longer than
// a 2^19-bit integer (Go's decimal conversion is quadratic: three million
// digits took 81 s), and JSON integers that long stay a $literal. An
// error message is clipped to 16 KiB, and fail() prints a container too
// large for that as its type.
//
// # Why memory is bounded twice
//
// Many small steps (d[i] = v, a comprehension, l += [x]) grow the heap
// without any single big operation. For those a sampler goroutine reads the runtime's
// heap-object bytes (runtime/metrics, no stop-the-world, well under a
// microsecond) every millisecond and cancels the thread when the growth
// since the run started passes the limit. Before blaming the script it
// forces one collection (at most every 10 ms) and samples again: the
// process heap holds garbage, and the collector's goal may be far above a
// run's limit after an earlier large run. Growth above four times the limit
// cancels at once. The same re-check runs when an operator's estimate plus
// the sampled growth is over the limit. The measure is the process heap,
// so concurrent runs see each other's allocations; it is a safety net
// that keeps the process alive, and the per-operation estimates are the
// precise part. A separate worker process with RLIMIT_AS would be exact
// but costs a process per run; we chose to stay in-process.
//
// Measured (go test -run TestMemoryLimit -v, amd64, peak growth of the
// process heap sampled every 100 µs by the test): the doubling loop
// `s = "x" * 1000000; for i in range(40): s = s + s` stops when s is
// 122 MiB and s + s would need 244 MiB more, with the default 256 MiB
// limit, peak heap growth 214 MiB; with
// a 64 MiB limit: `l = l + l` peaks at 30 MiB, `l.extend(l)` at 36 MiB,
// join/format/replace/str/json.encode explosions at under 10 MiB (refused
// before allocating); with a 32 MiB limit, append growth peaks at 32 MiB
// and dict growth (caught by the sampler) at 50 MiB. Integer products are
// capped at 2^19 bits, because one huge multiplication runs inside a
// single step and would escape the timeout. The checks cost 1.6-2x on a
// loop made of nothing but checked operators, against a bare Starlark
// thread (BenchmarkCheckedOperators; `n + 1` with a number literal is not
// checked), which is noise next to any tool call.
//
// The JSON encoding of a `result` or of a call's arguments is held to its
// byte cap before each string or literal is copied, not measured after:
// a 100 MB string over a 1 MiB maxOutputBytes is refused without taking
// its size again (and the buffer's doubling) outside the memory limit.
//
// # Why a hand-written JSON parser
//
// Every tool result is parsed into Starlark values. Going through
// encoding/json's token API was two thirds of the cost of a call from a
// script; the parser in jsonparse.go builds values directly and accepts
// exactly what json.Valid accepts (FuzzJSONRoundTrip checks both, and that
// strings decode as encoding/json decodes them). A script's call to a
// trivial in-memory host costs about 2.2 µs, 6.1x a direct Host.Call
// (BenchmarkCalls, BENCHMARKS.md); parallel() with limit 8 over 50 calls of 20 ms is
// about 7x faster than a loop (BenchmarkParallel; 7 rounds instead of 50).
//
// # Why the depth limit lives in the step hook
//
// Recursion is allowed (FileOptions.Recursion), so runaway recursion must
// end as a `limit` error naming `depth`, never as a Go stack overflow.
// starlark-go has no call hook, but Thread.OnMaxSteps runs inside the
// interpreter loop. We set the step limit to the next check point instead
// of the real limit, and the hook re-arms itself: it checks the real step
// limit and the call depth, then schedules the next check after
// (MaxDepth - depth) / 2 steps. The stack grows by at most two frames per
// step (a built-in calling a function), so depth can never pass MaxDepth
// unseen, and at shallow depth the hook runs only every few dozen steps.
//
// # Why parallel takes call descriptions, not lambdas
//
// Starlark values are not safe to share between threads unless frozen, and
// a script's globals are not frozen while it runs. Running arbitrary
// lambdas concurrently would race on them; running them one by one would
// not be parallel. So parallel() takes tool calls as data (capability or
// tool function plus an args dict), converts the arguments to JSON on the
// Starlark thread, and only the host calls run on goroutines.
//
// # Why pre-flight before admission before running
//
// A script that fails halfway has already made its side effects. So Run
// first parses and resolves the script and reports every problem at once
// (undefined names, unknown tools with "did you mean", unknown or missing
// keyword arguments, literal arguments of the wrong type or outside an
// enum, load()) as one `syntax` error with a list of problems; then it asks Host.Admit about every capability the script
// names literally, so a tool that needs approval is refused with its
// remedy before anything runs. Capabilities computed at run time are
// reported as Preflight.Dynamic; the host's Call must check them (and
// call() returns a refusal as a value of kind admission).
//
// # Why logs are truncated, not fatal
//
// The log is for the model's benefit; failing a run that already made
// calls because it printed too much would throw away work and side
// effects. print() output past MaxLogBytes is dropped, a last line names
// the limit and Result.LogsTruncated is set. Every other limit ends the
// run with a typed Error{Kind: limit, Limit: <name>} and a remedy.
package sandbox
