// Package upstream owns the gateway's live client slot for one declared
// server: launching it, leasing its client to calls, the timeout rule of a
// call, relisting its tools, idle reaping, backoff and crash-loop
// accounting, and teardown. Nothing outside this package touches a slot's
// state; callers get a Lease (Acquire or Running) and give it back with
// Release.
//
// It imports gateway/mcp and gateway/proc (the client and its teardown
// outcome) and the standard library. It must never import the gateway root
// (it reports typed errors the gateway turns into its own), config, trust,
// catalog, or any third-party module; how a server is launched is the
// Config.Launch function the gateway supplies.
//
// # Why an internal package
//
// The slot's mutex used to be taken from four files of the gateway, each
// re-implementing part of the lease (in-flight counts, last use, the
// timeout of a call). Inside gateway/internal the compiler keeps everyone
// else out: the only way to a client is a lease, and the only timeout is
// Lease.Timeout.
//
// # Why a dead client is not relaunched for the calls that saw it die
//
// A call that was in flight when the server died fails with that error;
// the next Acquire may launch a new client after a backoff that doubles
// per consecutive failure (Config.RestartBackoff up to MaxRestartBackoff).
// Config.CrashLoopLimit failures in a row stop relaunching until
// ResetFailures (an explicit refresh): a server that cannot start should
// say so once, not be respawned on every call.
//
// # Why a launch does not inherit the caller's cancellation
//
// Several callers may wait for one launch; one impatient caller giving up
// must not count as the server's failure, so the launch runs under a
// context without the caller's cancellation (its own bounds are the
// client's handshake timeout).
package upstream
