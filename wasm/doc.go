// Package wasm hosts WebAssembly result filters (ABI mcpf v1, specified in
// ABI.md) on wazero. It owns the runtime, the compilation cache, the import
// allow-list, instance pools, per-call limits, the built-in filters (embedded
// from filters/<name>/<name>.wasm) and an on-disk store for offloaded results
// (OffloadStore).
//
// It is a leaf: it imports no package of sluice (not even wasm/guest) and is
// the only importer of wazero; no wazero type appears in its API. It takes and
// returns bytes; the gateway decides where filters run and what to do when
// one fails (Decide).
//
// # Why a pull ABI
//
// The guest pulls its input with input_len/input_read and pushes output with
// output_write; the host copies during those calls and never allocates in
// guest memory. No pointer outlives a call, garbage-collected guests need no
// pinning, and a filter call is one host→guest call (each costs ~0.5 µs with
// CloseOnContextDone).
//
// # Why CloseOnContextDone despite its cost
//
// Without it neither the deadline nor Module.Close stops a spinning guest. In
// wazero v1.12.0 it turns every loop header of guest code into a call out
// to Go (~15–40 ns here), and Go's wasm code routes branches through a
// dispatch loop, so loop-heavy guest code runs many times slower than native.
// That call out is also what lets the Go scheduler take the thread back:
// native guest code is never preempted, so with GOMAXPROCS=1 (sluice serve
// on stdio) nothing else runs, not even the deadline's timer, until the
// guest reaches Go again.
//
// # Why every function starts with a loop
//
// wazero checks only at loop headers, so a guest with no loop that recurses
// (f(n) = f(n-1) + f(n-1), mutual recursion, recursion through a table)
// ran past any deadline, and on one thread froze the whole process. Before
// a module from configuration is compiled, withEntryChecks puts an empty
// loop (loop, end) at the start of each function body: wazero lowers its
// header to the check (an indirect call, which its optimizer keeps), so
// every call passes one; the loop closes at once, so no branch of the
// function's own code changes meaning. Bodies whose straight-line start
// already reaches a loop (most of a Go guest's) are left alone. Any
// unbounded run either takes loop back-edges or makes calls, so it now
// meets a check infinitely often. Only the code section's sizes are
// re-encoded; every other byte is kept (fuzzed: the rewrite compiles
// exactly when the module does and behaves the same). wazero caches code
// under the digest of the bytes it compiles, so the rewrite's code is never
// confused with the module's. Cost on the built-in Go guests compiled this
// way: 1–3% (BenchmarkEntryChecks). Recursion too deep for the stack traps
// (stack overflow), a failure like any trap.
//
// # Why a loop follows every bulk instruction
//
// memory.fill, memory.copy, memory.init, table.fill, table.copy and
// table.init do work proportional to an operand without passing a loop
// header (wazero lowers them to a memmove or an inner loop of its own), so
// straight-line code of a few thousand 32 MiB fills (a 9 KB module) ran
// 28.8 s past a 50 ms deadline, with a one-thread sluice serve frozen all
// along. The rewrite therefore also puts the empty loop right after each
// of them, which needs every instruction decoded to find them
// (appendWithBulkChecks): the walk reads each opcode and its immediates as
// wazero v1.12.0 does with the runtimes' features (api.CoreFeaturesV2;
// SIMD opcodes are one byte to it), and refuses a body it cannot decode,
// or an opcode outside those features, with the instruction's offset (the
// compiler would refuse it too). A call now overruns its deadline by at
// most one bulk instruction (or one host call, below): a memory is at
// most MaxMemoryPages (32 MiB by default, 4 GiB at the most one can
// configure), a data segment at most the module, a table at most 2^20
// elements (8 MiB), so one instruction is milliseconds of memset by
// default (at the memory bandwidth of gigabytes a second), about a second
// at the 4 GiB cap. memory.grow and
// table.grow are bounded the same way and in total, by the caps. The check
// costs one call out per bulk instruction, nothing beside the memmove.
//
// # Why a loop follows every call of an import
//
// A host function passes no termination check either (only guest
// functions start with one), so straight-line code of 100 calls of WASI
// random_get filling a 32 MiB memory (more than 100 ms each here), or
// 500 of them through a table, ran more than a minute past a 50 ms
// deadline. The rewrite therefore also puts the empty loop after each
// call of an imported function (the first function indexes) and after
// each call_indirect (a table may hold an import). A call now overruns
// its deadline by at most one host call, and a host call's own work is
// bounded (next section). A loop of host calls already passed a check at
// each iteration.
//
// # Why some WASI functions are sluice's own
//
// A host call's work was bounded only by the guest's memory: one
// random_get, fd_write (four million empty buffers) or poll_oneoff
// (700,000 subscriptions) over a 32 MiB memory took 70–175 ms each, four
// times that at 128 MiB, seconds at the 4 GiB cap, none of it interruptible,
// and one offload_put wrote up to MaxOffloadBytes to disk with no deadline.
// So random_get is sluice's (wasi.go): it fills randomChunk bytes at a
// time and checks the deadline before each (same deterministic stream as
// wazero's default); poll_oneoff is sluice's, answering as wazero does for
// a filter's three files and clocks that do not sleep, capped at
// maxPollSubscriptions (EINVAL above); fd_write stays wazero's, but every
// write to stdout (now counted and discarded) or stderr counts at least
// stderrWriteCost against the call's budget, so it fails after a few
// thousand buffers. Options.Offload gets the call's context, which ends at
// its deadline (OffloadStore.PutContext writes a MiB at a time and gives up
// leaving nothing behind), and a put cut short ends the call as its
// deadline. mcpf's other functions do work bounded by MaxInputBytes (which
// the deadline grows with), MaxOutputBytes or small caps (error, log,
// input_find's keys); the remaining WASI functions do constant work.
//
// # Why a module's counts are checked before it is compiled
//
// wazero v1.12.0 sizes slices, maps and strings from the counts and
// lengths a module declares before it reads what they count: a module of
// a few hundred bytes declaring a function type of 2^28 parameters, or an
// export name of 4 GiB, made it allocate gigabytes (14 GiB resident, two
// minutes, in one case), and some malformed modules made it panic. The walk
// that puts the entry checks in (checkSection, withEntryChecks) therefore
// checks each such count against the bytes left in its section and caps a
// function's locals at 50,000; a compiler panic becomes a CompileError
// (compileModule). Both refuse only modules the compiler would refuse too,
// save the locals cap. A function body that does not decode is reported
// only once every later body and section has passed these caps, so a
// module is refused for a count before anything compiles it, whatever
// precedes the count (fuzzed: FuzzWithEntryChecks compiles every module
// the walk refuses for another reason).
//
// # Why a module's compile time is bounded
//
// wazero v1.12.0's compiler takes time growing with the square of a
// function's basic blocks (see maxFunctionBlocks), so a crafted module
// of a few hundred kilobytes, all blocks and branches, compiled for
// minutes (one of 900 KB was seen never to finish), holding up the
// Load that sluice's startup or a filter's first use waits for. The walk
// that puts the entry checks in therefore refuses a function of more than
// 10,000 block and branch instructions, or of more than 2.5e8 for their
// count times its code's bytes, with the function's index and offset
// (ErrFunctionTooComplex): one function then compiles in a few seconds
// at the most (the built-in Go guests are 6× and 3× under the caps). A
// module of many such functions is bounded by a budget: CompileTimeout +
// CompileTimeoutPerMiB × its size (10 s + 5 s per MiB by default; a 2.7
// MB Go guest takes 3 s on one core). The compile runs on two goroutines
// of its own, which wazero lets a context stop between functions; at the
// budget Load returns ErrCompileBudget (in a CompileError naming the
// filter) and the compile ends after the functions it is on, closing
// anything it finished; Close waits for it. Built-ins are not bounded.
//
// # Why built-in filters run without termination checks
//
// Those checks (an indirect call per loop iteration, and every Go function
// starts with a loop) doubled the cost of the built-in redactor: 4× native
// Go against 2–2.5× without them, on 64 KiB and 1 MiB results (measured
// in one run, wasm/bench_test.go). The built-ins are this repository's
// code, embedded and pinned by SHA256SUMS, linear in their input (fuzzed)
// and bounded by MaxInputBytes, so they are compiled by a second runtime
// without the checks. Their deadline still holds for the caller: a call
// runs on its own goroutine, and when it overruns, Run returns a
// TimeoutError at the deadline and abandons it: the guest's next host
// call traps (so it never reads the caller's input again), and the
// instance is closed when the call returns; Close waits for such calls.
// Modules from configuration always get the checks, in their own cache
// directory (wazero keys cached code by module digest alone).
// Options.CheckBuiltins restores them for the built-ins too.
//
// An abandoned call's instance is replaced at once, so the pool keeps its
// size; while a server's abandoned call runs on, that server's new calls
// are refused (OverrunError, which is not a failure), so one server's big
// results never pile up runaway calls, and the timeouts of a server's
// overlapping calls count as one failure. A guest that makes no host call
// cannot be preempted by the Go runtime (a garbage collection waits for
// it), so a built-in runs unchecked only with a config that keeps its work
// between host calls small: redact with configured patterns keeps the
// checks (builtinUnchecked).
//
// With GOMAXPROCS=1 the hand-off does not hold either: until a built-in's
// native code makes a host call or returns, it has the only thread, the
// caller included, so the deadline fires only then. Both built-ins make
// host calls as they go (the host's skip and keyword search), between
// which their work is linear in a part of an input of at most
// MaxInputBytes, so the process stalls no longer than that work; but a
// built-in call that never returned would stop it for good. Compiling
// them with checks would double their cost on every result;
// Options.CheckBuiltins is that choice.
//
// # Why input_json_skip
//
// For that reason the host offers one pure helper beyond plain I/O: skipping
// a JSON value of the input natively (memchr speed). The shape filter walks a
// result's few structural members in the guest and lets the host skip the
// long strings; this cut its 64 KiB cost by ~6× (measured).
//
// # Why output_input, and why some output is not validated twice
//
// A shaped result is mostly a prefix of one input string. The guest names
// such runs of its input (output_input) instead of copying them out, and
// the host assembles the output once. Every output is validated, but for a
// built-in filter on input the caller vouches for (Meta.ValidInput: the
// gateway's MCP framing validated it) a run copied from inside one input
// string that input_json_skip walked over, starting and ending on
// character boundaries and holding no control byte, is whole valid string
// characters, so the validator steps over it (trustedSpans): on a 64 KiB
// result that was a sixth of the call, spent re-reading bytes the skip had
// just read. The checks do not depend on the guest behaving: a skip started
// at a closing quote records the gap to the next string, which the
// control-byte check rejects (whitespace between values), and cuts are
// checked where they fall. In -race builds the output is validated in full
// as well, so a caller vouching for an invalid input fails its tests.
//
// # Why the string skip is in assembly
//
// Nearly all of a shaped call's host work is finding where the long strings
// end. masks64 (SSE2, AVX2 where the processor has it) gives the quote,
// backslash and control-byte masks of 64 bytes at once and the escapes are
// resolved from the backslash mask without a branch per escape: on 64 KiB
// of prose that is 0.6× the word-at-a-time Go loop it replaced, on escaped
// JSON inside a string 0.2×. The same pass tells whether the string holds
// a control byte, so trustedSpans needs no second look at a clean one.
// Elsewhere a Go loop computes the same masks (masks64Go, also the
// reference the assembly is tested and fuzzed against).
//
// # Why output buffers are lent, not given
//
// A call's output used to be a new buffer per call. In a process holding
// compiled Go guests the live heap is mostly wazero's and full of pointers,
// so each collection costs milliseconds, and a 16 KiB output per call
// started one every few hundred calls: with the allocation itself, about a
// fifth of a pooled 64 KiB shape call. The output is now assembled in a
// buffer lent to the caller: Output.Release gives it back to the Host's
// small free list for a later call. Forgetting Release costs only the
// garbage collection it always cost. Misuse is contained: each lending has
// its own generation, so a second Release or the Release of a stale copy
// does nothing, and -race builds overwrite released bytes (a use after
// Release shows as corrupt output, and a read racing the next call's write
// is a reported race).
//
// # Why the worker hand-off stays
//
// A call on a built-in runs on its instance's goroutine so that the caller
// can walk away at the deadline. Handing it over costs about a microsecond,
// handing the result back several on this kind of machine: Go's scheduler
// wakes an idle processor's thread whenever a goroutine becomes runnable
// (with GOMAXPROCS=1 the return costs a microsecond too). Running the call
// on the caller's goroutine would make the deadline unenforceable (nothing
// stops a guest without termination checks), and spinning the caller for
// the whole call would double its CPU; neither is worth those microseconds.
//
// # Why pools keyed by module and config digest
//
// A Go guest costs 2–4 ms to instantiate, so instances are reused; an
// instance that parsed its config in mcpf_init must only serve that config.
// Pools are bounded channels, not sync.Pool: wazero keeps every instance
// until closed, so a dropped instance would leak.
//
// # Why a memory-limit error is inferred
//
// wazero reports a failed memory.grow to the guest, not to the host. A trap
// while the instance's memory is within 64 pages (4 MiB, the Go runtime's
// growth step) of the cap is therefore reported as MemoryLimitError.
package wasm
