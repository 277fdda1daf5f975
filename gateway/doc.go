// Package gateway assembles sluice. It turns declarations (config) and trust
// records (trust) into capabilities named <server>__<tool>, answers find and
// describe from live listings and recorded catalogs (catalog), launches
// trusted servers lazily through the native client (mcp, proc), admits every
// call, runs results through the WebAssembly filters (wasm), runs code-mode
// scripts (sandbox), and serves all of it to agents (front).
//
// It is the only package that imports the other gateway packages, sandbox
// and wasm. No subpackage of gateway imports it, and cmd/sluice imports
// nothing else of sluice; gateway/layering_test.go enforces both.
//
// Every surface reaches one decision point per operation: Find, Describe,
// Call, Execute, ReadResult. The CLI, sluice serve and scripts differ only in
// how they ask for approval.
//
// # Why find and describe never launch
//
// Discovery must be free and safe: a listing costs a process launch and a
// handshake, and a project declaration must never run because someone
// looked at it. Find reads live listings of servers this gateway already
// runs and recorded catalogs otherwise; a trusted server with neither is
// reported as missing, with the one command that records it (a scoped
// refresh, which launches exactly that server). Provenance (live, cached,
// missing) is reported apart from run status, because a cached catalog says
// nothing about a process.
//
// # Why a search index beside each catalog
//
// Find over 32 servers × 500 tools used to decode every schema of every
// tool: 69× the cost of starting the binary. The index keeps only names,
// titles, first descriptions and the read-only hint, written in the same
// atomic store as the catalog and checked against the same identity, so
// find reads a few kilobytes per server (about 5.7× `sluice version` as a
// whole process, BENCHMARKS.md).
//
// # Why trust is read on every decision
//
// Catalogs and running clients confer no authority. The trust file is read
// (bounded) for each find, describe and launch, so a record removed by
// `sluice untrust` in another terminal counts at once, and an edited
// declaration (reloaded when its file changes) closes its running server.
//
// # Why a call to a running server may use a resolution up to RecheckEvery old
//
// Resolving a server (two stats of the declaration files, reading and
// parsing the trust file, digests of every declared field) cost more than
// the upstream hop of a small call. A call to a server that is running
// right now therefore reuses the resolution of an earlier call while the
// files are unchanged: it looks at them (a stat each) at most every
// RecheckEvery (100 ms), and anything that changed (a new modification
// time or size of a declaration file, a new trust file: trust writes
// replace it by rename) drops every remembered resolution; Trust, Untrust
// and a reload in this process drop them at once. So an edited declaration,
// a revoked or stale trust record reaches calls at most RecheckEvery after
// the file changed. The filters a call's result passes through come from
// the same look (a filter added to the file applies to results at most
// RecheckEvery after the edit, and a reload in this process counts at
// once), and the reviewed tool baseline is looked at on the same schedule
// (one written or removed by this process counts at once): a call stats no
// file in the common case. Whatever may launch is decided afresh: a call
// whose server is not running resolves from the files, and every launch checks
// the files again just before it spawns (the server may have died after
// the call looked), refusing an untrusted or changed declaration. A cli
// server's call runs a process every time, so it always resolves afresh.
//
// # Why a dead server is not restarted for the calls that were on it
//
// The client never restarts its process; the gateway holds one client slot
// per server. Calls in flight on a client that dies fail with that client's
// error. The next call may launch a new client after an exponential backoff,
// and after CrashLoopLimit consecutive failures the server is reported as
// crash-loop and not relaunched until a scoped refresh: a server that dies
// on every call must become a clear status, not a fork bomb.
//
// # Why launching ignores the caller's cancellation
//
// A launch is shared by every caller waiting for that server. If the first
// caller's context cancelled the handshake, one impatient caller would count
// as the server's failure for everyone. The launch runs to its own bound
// (the client's initialize timeout); each waiter gives up on its own context.
//
// # Why the catalog is recorded before waiters are released
//
// A short-lived caller (one `sluice call`) exits as soon as its call
// returns. Recording the catalog after releasing it would race the exit and
// leave the cache without the listing the launch paid for. Background work
// that remains (relists after tools/list_changed, teardowns of dead
// clients) is tracked, and Close waits for it.
//
// # Why admission refuses before launching when it can
//
// A call that needs approval nobody can give (no prompt, no --yes, no
// approve glob) is refused from the recorded listing before any process
// starts. When there is no listing, the server is launched (it is trusted)
// and the live listing decides. Scripts get the same refusal for every
// capability they name, before the script runs: a script that fails halfway
// has already made its side effects.
//
// # Why filters are checked when serving starts but load on first use
//
// Compiling a built-in filter takes about a second cold and tens of
// milliseconds from the on-disk cache, and a loaded filter holds about
// 16 MiB (its machine code, the decoded module and a warm instance) — more
// than the rest of an idle gateway. Open checks everything that can be
// checked cheaply (configuration, module files, sha256 pins, the results
// directory) and refuses to start on any error, but does not compile: a
// one-shot command ('sluice find', 'sluice describe') never runs a filter
// and should not pay for one. 'sluice serve' runs CheckFilters before it
// answers its first request: every filter the configuration names is
// compiled and initialised with its config, and serve refuses to start if
// one fails (fail closed), so a broken filter is a start-up error, not a
// surprise on some later call. The check then lets go of them, and each
// filter loads alone, from the now warm compilation cache, when a result
// first needs it: the default shape filter, for one, never loads while
// results stay within its budget. A filter changed while serving is
// compiled once when its new set first runs it; never per call.
package gateway
