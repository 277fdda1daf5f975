// Package mcptest is a fixture MCP server for sluice's tests and demo. It
// owns the fixture's protocol handling (both eras), its tool set and its
// misbehaviour modes. It uses the standard library only and must never import
// another package of sluice: the client under test must not share code with
// the server it is tested against.
//
// The fixture runs in two ways:
//
//   - in memory: [Serve] over any reader/writer pair (io.Pipe in unit tests);
//   - as a real process: [Main] behind cmd/mcpfixture, or a test binary that
//     re-executes itself ([Command] + [RunIfReexec]).
//
// Modes ([Mode]) combine: "paginated,banner,slow" is a server that pages its
// tool list, prints noise on stdout and answers late. The tools are
// documented on [BuiltinTools].
//
// Era handling: server/discover (with a valid per-request _meta) and
// initialize both work unless ModeModernOnly or ModeLegacyOnly says
// otherwise. A connection that answered initialize is legacy for its whole
// life and ignores _meta; before that, every request must carry the
// 2026-07-28 _meta (protocolVersion, clientCapabilities; -32602 if missing,
// -32022 with data.supported for an unknown version) and its result carries
// resultType "complete" and _meta serverInfo.
//
// # Why a re-executed test binary instead of go build
//
// Building cmd/mcpfixture from inside a test costs seconds on a cold cache
// and needs a toolchain at test time. A test binary that imports this package
// already contains the whole fixture; [RunIfReexec] called from an init
// function turns it into the fixture when its first argument is [ReexecArg].
// An init function (not TestMain) is used so that the hook coexists with any
// TestMain another file of the same test package defines.
//
// # Why the reader works in lockstep with the dispatcher
//
// The "stop-reading" mode must stop consuming stdin for real, so that a
// client's outbound buffer and the pipe fill up. A reader goroutine that ran
// ahead would drain the pipe into memory and hide exactly that condition, so
// the reader hands over one line and waits for the dispatcher to ask for the
// next.
//
// # Why process-level modes live in Main
//
// Ignoring SIGTERM, spawning a grandchild and exiting mid-call only make
// sense for a real process. [Serve] reports a crash as [ErrCrashed] after
// writing a torn frame; [Main] turns it into an exit status. Grandchildren
// are spawned through [Options.Spawn], which Main fills in.
package mcptest
