// Package catalog caches each declared server's tool catalog on disk, so
// find and describe can answer "what tools exist?" without launching
// anything.
//
// A catalog is machine state, not policy: it costs a process launch and a
// handshake to learn, and it is the same answer every session until the
// declaration or the server changes. It confers no authority. Trust is
// resolved from the trust file every time, and a call still validates
// against the live listing.
//
// catalog imports only the standard library, gateway/internal/files (the
// atomic writer) and gateway/proc (private directories). It takes plain
// values (an Identity of strings, tools as raw JSON) and must never import
// config, trust or the gateway root.
//
// # Why one answer for every bad file
//
// Malformed, oversized, version-mismatched, identity-mismatched,
// future-dated and expired files are all the same answer: a miss. There is
// no degraded hit, because every caller of a degraded hit would have to
// decide separately whether to trust it.
//
// # Why the file name hashes only four identity fields
//
// The name is a SHA-256 of project root, scope, declaration path and server
// id; the digest and cwd are verified from the body. A changed declaration
// therefore overwrites its own file on the next write instead of stranding
// an unreachable one forever.
//
// # Why Store returns a bool
//
// A cache that cannot be written must never fail the live listing that
// produced it. Store reports success and the caller carries on either way.
// A tool that Load would reject is dropped before writing, so a round trip
// is never what invalidates a file.
//
// # Why find reads compact files
//
// find over 32 servers of 500 tools spent most of its time decoding JSON:
// each server's search index and its baseline, whose reviewed
// definitions it only needs when the tool set changed. Beside each
// catalog sits a compact index (names, titles, descriptions, their lower
// case, hashes and the set hash; length-prefixed strings read as
// substrings of the file, no parser), and beside each baseline a set file
// holding its set hash. Both are derived data, never trusted on their
// own: a CRC-32 covers the body, and each records the size and
// modification time of the file it was derived from (taken from the
// written file before its rename, so a racing writer is detected). A
// compact file that is corrupt, of another version or no longer derived
// from its source is rebuilt from the source and rewritten; the source
// still decides every miss.
//
// # Why a baseline upgrade adopts the new fields
//
// A baseline binds every field of a tool the model reads or a client acts
// on: name, title, description, both schemas, annotations, _meta, icons
// and execution (format 2). Format 1 did not bind the last three, so its
// files cannot say what they were when the tools were reviewed. Holding
// every tool that has one of them would make an upgrade of sluice look
// like a rug pull of every server; ignoring them would leave the gap
// open. So a format-1 baseline is upgraded against the listing at hand
// (the recorded catalog when it is loaded, else the next listing): a
// tool whose listing matches it on every field format 1 bound adopts its
// listed _meta, icons and execution, as a first listing's are adopted; a
// tool that does not match keeps its old definition (marked with the
// format it was recorded in) and stays held, and review shows its new
// fields as not recorded before. Origin and review time are kept, and
// upgradedFrom says the file was upgraded. An older sluice refuses a
// format-2 file as of another version and holds every tool.
package catalog
