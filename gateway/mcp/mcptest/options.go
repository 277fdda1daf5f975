package mcptest

import (
	"sort"
	"strings"
	"time"
)

// Mode is one behaviour of the fixture. Modes combine (see ParseModes).
type Mode string

// The fixture's modes. Unless stated, a mode changes only what it names and
// the server otherwise behaves like ModeEcho.
const (
	// ModeEcho is the well-behaved default: dual-era, exits on stdin EOF.
	ModeEcho Mode = "echo"
	// ModeSlow delays every response by Options.Delay (default 2s).
	ModeSlow Mode = "slow"
	// ModePaginated pages tools/list by Options.PageSize (default 2).
	ModePaginated Mode = "paginated"
	// ModeCursorLoop pages tools/list but always returns the same nextCursor.
	ModeCursorLoop Mode = "cursor-loop"
	// ModeHuge appends Options.HugeBytes (default 6 MiB) of text to every
	// tools/call result, making the line longer than a 4 MiB cap.
	ModeHuge Mode = "huge"
	// ModeCrash writes a torn frame and exits on the first tools/call.
	ModeCrash Mode = "crash"
	// ModeExitAtStart writes a fatal message to stderr and exits with status
	// 2 before reading anything.
	ModeExitAtStart Mode = "exit-at-start"
	// ModeIgnoreSIGTERM ignores SIGTERM (process only) and implies
	// ModeIgnoreEOF: only SIGKILL ends it.
	ModeIgnoreSIGTERM Mode = "ignore-sigterm"
	// ModeIgnoreEOF keeps running after stdin EOF until signalled.
	ModeIgnoreEOF Mode = "ignore-eof"
	// ModeGrandchild spawns, at start, a grandchild in the same process
	// group that ignores SIGTERM, inherits stdout and stderr, and sleeps.
	ModeGrandchild Mode = "grandchild"
	// ModeFlood answers the first request after the handshake by writing
	// bytes that never end a line, until the write fails. Combined with
	// ModeNoInit it floods in answer to the handshake itself.
	ModeFlood Mode = "flood"
	// ModeInvalidUTF8 puts invalid UTF-8 bytes inside the JSON string of
	// every tools/call result frame.
	ModeInvalidUTF8 Mode = "invalid-utf8"
	// ModeBanner writes a non-JSON line on stdout at start and another one
	// before every tools/call response.
	ModeBanner Mode = "banner"
	// ModeStopReading never reads stdin again once the handshake response
	// (initialize or server/discover) is written.
	ModeStopReading Mode = "stop-reading"
	// ModeStderrFlood writes lines to stderr without pause for as long as
	// the server runs (a client that does not drain stderr stalls it).
	ModeStderrFlood Mode = "stderr-flood"
	// ModeNoInit never answers initialize or server/discover.
	ModeNoInit Mode = "no-init"
	// ModeModernOnly answers initialize with -32022 and requests without a
	// per-request _meta protocol version with -32602.
	ModeModernOnly Mode = "modern-only"
	// ModeLegacyOnly answers server/discover with -32601 and ignores the
	// per-request _meta, like servers built on the TS SDK v1.
	ModeLegacyOnly Mode = "legacy-only"
	// ModeLeaky adds tools, a resource and a prompt that put LeakKey in
	// every place a result, an error or a notification can carry text
	// (see leaky.go), for tests of what reaches the agent.
	ModeLeaky Mode = "leaky"
	// ModeHugeListings lists HugeListingEntries resources, resource
	// templates and prompts, each with a title and a description far over
	// a listing's per-entry cap, together far over its per-list cap (see
	// hugelist.go).
	ModeHugeListings Mode = "huge-listings"
	// ModeInitRefused answers initialize and server/discover with a
	// JSON-RPC error whose message and data carry LeakKey (a server that
	// repeats the credential it finds wrong).
	ModeInitRefused Mode = "init-refused"
)

var allModes = []Mode{
	ModeEcho, ModeSlow, ModePaginated, ModeCursorLoop, ModeHuge, ModeCrash,
	ModeExitAtStart, ModeIgnoreSIGTERM, ModeIgnoreEOF, ModeGrandchild,
	ModeFlood, ModeInvalidUTF8, ModeBanner, ModeStopReading, ModeStderrFlood, ModeNoInit,
	ModeModernOnly, ModeLegacyOnly, ModeLeaky, ModeHugeListings, ModeInitRefused,
}

// Modes lists every mode the fixture knows, in a stable order.
func Modes() []Mode { return append([]Mode(nil), allModes...) }

func knownModes() string {
	names := make([]string, len(allModes))
	for i, m := range allModes {
		names[i] = string(m)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// ParseModes parses a comma-separated list such as "paginated,banner".
// Empty items are ignored; "" yields ModeEcho alone.
func ParseModes(csv string) ([]Mode, error) {
	var out []Mode
	for _, f := range strings.Split(csv, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		known := false
		for _, m := range allModes {
			if string(m) == f {
				known = true
				break
			}
		}
		if !known {
			return nil, &ModeError{Name: f}
		}
		out = append(out, Mode(f))
	}
	if len(out) == 0 {
		out = []Mode{ModeEcho}
	}
	return out, nil
}

// Options configure the fixture. The zero value (or nil) is a well-behaved
// dual-era server named "mcpfixture" with the builtin tools only.
type Options struct {
	Modes []Mode
	// Name is serverInfo.name; default "mcpfixture".
	Name string
	// Tools adds generated read-only tools tool_0001..tool_N.
	Tools int
	// ToolsFile names a JSON array of extra tool definitions (each an
	// object with at least a name), listed after the others and read
	// again at every tools/list, so a test can change what the server
	// says mid-session (then call list_changed). Calling one answers
	// "NAME called".
	ToolsFile string
	// InstructionsFile names a file whose text is the handshake's
	// instructions, read again at every handshake, so a test can change
	// what the server tells agents between sessions.
	InstructionsFile string
	// LeakEnv, with ModeLeaky, names an environment variable whose value
	// the server plants instead of LeakKey (written as Go's encoder
	// escapes it): a server echoing a credential it was given.
	LeakEnv string
	// PageSize pages tools/list; 0 = one page (2 when ModePaginated is set).
	PageSize int
	// Delay is added before every response; ModeSlow defaults it to 2s.
	Delay time.Duration
	// Together holds the first Together tools/call answers, each encoded,
	// until the last of them is ready, then writes them back to back: the
	// client gets the burst at once however slowly each was produced.
	// 0 or 1: each answer goes out when it is ready.
	Together int
	// HugeBytes is the default size of the "huge" tool (1 MiB) and of the
	// padding ModeHuge adds (6 MiB).
	HugeBytes int
	// Spawn starts a grandchild process and returns its pid; the "grandchild"
	// tool and ModeGrandchild use it. Main fills it in; nil makes the tool
	// report isError.
	Spawn func() (int, error)
}

// Has reports whether m is among o's modes (nil o has none).
func (o *Options) Has(m Mode) bool {
	if o == nil {
		return false
	}
	for _, x := range o.Modes {
		if x == m {
			return true
		}
	}
	return false
}

func (o *Options) name() string {
	if o == nil || o.Name == "" {
		return "mcpfixture"
	}
	return o.Name
}

func (o *Options) pageSize() int {
	if o == nil {
		return 0
	}
	if o.PageSize > 0 {
		return o.PageSize
	}
	if o.Has(ModePaginated) || o.Has(ModeCursorLoop) {
		return 2
	}
	return 0
}

func (o *Options) delay() time.Duration {
	if o == nil {
		return 0
	}
	if o.Delay > 0 {
		return o.Delay
	}
	if o.Has(ModeSlow) {
		return 2 * time.Second
	}
	return 0
}

func (o *Options) hugeTool() int {
	if o != nil && o.HugeBytes > 0 {
		return o.HugeBytes
	}
	return 1 << 20
}

func (o *Options) hugePad() int {
	if o != nil && o.HugeBytes > 0 {
		return o.HugeBytes
	}
	return 6 << 20
}

func (o *Options) ignoreEOF() bool {
	return o.Has(ModeIgnoreEOF) || o.Has(ModeIgnoreSIGTERM)
}
