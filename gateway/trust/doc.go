// Package trust owns the trust records file, <config dir>/trust.json: a
// bounded, strict read (Read, Decode), a locked atomic write (Upsert,
// Remove), and the status of a declaration (Resolve).
//
// A record binds four values: the canonical (symlink-free) project root,
// the server id, the SHA-256 digest of the server's declaration and the
// absolute path its command resolved to (Program). It also
// carries per-field digests, so a stale status can say which fields
// changed, and the action class the operator chose, which is a policy
// annotation and never part of the binding.
//
// trust takes plain values. It must never import gateway/config (or any
// other package of ours): the gateway converts declarations into Decl.
// It uses only the standard library; syscall.Flock (LockFileEx on
// Windows, lock_windows.go) serializes writers.
//
// # Why reads never repair the file
//
// An oversized, over-populated or corrupt trust file reads as empty plus a
// diagnostic: every project server becomes untrusted, which is the safe
// direction. Rewriting the file on read would silently destroy the
// operator's other records; Upsert and Remove refuse to replace an
// unusable file for the same reason and say how to move it aside.
//
// # Why a record for an id ending in "_" is set aside, not fatal
//
// Server ids may not end in "_" (a capability is split at its first "__",
// so server "fx_" and tool "echo" would read as server "fx", tool
// "_echo"); earlier versions wrote such records. Treating one as
// corruption would untrust every project server for a record that can
// never apply again, so Read sets it aside with a warning naming the
// `sluice untrust` command that removes it, every other record stays in
// force, writes keep it (a write never drops what the operator recorded
// without being asked) and Upsert refuses new ones.
//
// # Why a sidecar lock file
//
// Writers rename a fresh temp file over trust.json, so a lock held on
// trust.json itself would be held on an inode that the next rename
// unlinks: a second writer would lock the new inode and both would proceed.
// The lock lives on trust.json.lock, which is never replaced, and the whole
// read-modify-write happens under it, so two concurrent `sluice trust` runs
// both land.
//
// # Why the program is bound besides the digest
//
// The digest covers the declaration as written, and `command: node` is
// the same text whichever node the name finds. The program the gateway
// would launch is bound separately (it depends on the machine, not the
// declaration), so a different program behind the same name — another
// PATH, a new install in an earlier PATH entry — makes the record stale
// until a person looks again. A record without a program (written before
// programs were bound) is stale: the safe direction.
//
// # Why the action class is not bound
//
// Changing what runs (command, args, cwd, env, passEnv, timeout) must make
// the record stale until a person looks again. Changing how the gateway
// admits the server's tools is the operator's decision recorded here, so it
// lives in the record and a project file cannot set it.
//
// # Why remedies are exact commands
//
// An untrusted or stale status reaches both people and models. Both do
// better with a command they can run (or show) verbatim than with prose;
// roots are shell-quoted so the command survives pasting.
package trust
