// Package clients reads and writes the MCP server lists of other MCP
// clients (Claude Code, Claude Desktop, Cursor, VS Code, Windsurf, Codex,
// Gemini CLI): 'sluice import' turns their entries into sluice
// declarations, 'sluice install' adds sluice to their config and
// 'sluice uninstall' takes it out again.
//
// It owns the client formats, where each client keeps its files, the
// conversion of an entry into a neutral Entry, and the byte-preserving
// edits of a client's file. It never imports the gateway root or
// gateway/config: the caller renders declarations and decides what is
// declared. github.com/BurntSushi/toml is used here and nowhere else.
//
// # Why a client's file is spliced, not re-encoded
//
// A client's config holds much more than its server list (Claude Code's
// ~/.claude.json is its whole state; VS Code's files carry comments and
// trailing commas). Decoding and re-encoding would reorder keys, drop
// comments and rewrite numbers. So the file is only scanned to find the
// byte spans of the server list and its members, and an install inserts
// one member (or, with --replace, cuts members out); every other byte is
// what was there. Comments and trailing commas (JSONC) are blanked out,
// offset for offset, before scanning, so the spans found are the spans of
// the original.
//
// # Why uninstall restores a backup instead of undoing the edit
//
// "Restore the file byte for byte" is only provable by keeping the bytes:
// install keeps the file as it was in a private backup and records the
// hash of what it wrote. Uninstall restores the backup only while the file
// is still exactly what install wrote; if anything changed since (the
// client or a person edited it), restoring would lose that change, so it
// refuses and says how to proceed. Install refuses a file that changed
// since its last install for the same reason.
//
// # Why Codex's TOML goes through a library
//
// ~/.codex/config.toml is a full TOML document (profiles, nested tables,
// multi-line strings, dates); a reader for the mcp_servers part alone
// would still have to parse all of it correctly to find that part.
// github.com/BurntSushi/toml is the mature, dependency-free Go TOML
// decoder and it reports keys it did not decode, which is what reporting
// unknown fields needs. Installing into a TOML file appends a table at
// the end, which TOML allows anywhere, so the file itself is never
// re-encoded.
//
// # Why secrets become references
//
// An env value or header that looks like a credential (by its name or
// its shape) is never copied into a sluice file or printed: the
// declaration gets ${env:NAME} and a note says which variable to set. A
// value that already is a reference in the client's own syntax (${VAR},
// $VAR, ${env:VAR}) becomes the same sluice reference.
package clients
