package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"sluice/gateway"
)

// Exit codes beyond the shared ones; their meaning is the same in every
// subcommand that can produce them (see 'sluice help call').
const (
	exitToolError = 3 // the tool ran and reported failure (isError: true)
	exitRefused   = 4 // sluice refused: untrusted or stale server, approval needed or declined

	exitInterrupted = 130 // SIGINT or SIGTERM: servers were torn down (128 + SIGINT, the shell convention)
)

// exitCodeHelp is the exit-code table shared by the help texts of the
// commands that reach servers.
const exitCodeHelp = `Exit status:
  0    success
  1    sluice or the server failed (spawn, handshake, crash, timeout, crash loop,
       a fail-closed filter, unreadable files)
  2    bad input: flags, arguments, an unknown server or tool, no recorded catalog
  4    refused: the server is untrusted or stale, the call needs approval, or
       the tool is held because it changed since it was reviewed, or the
       configuration hides it (a tool subset, enabled: false, a profile)
  130  interrupted (SIGINT or SIGTERM); every launched server was stopped
`

// exitFor maps a gateway error to an exit code. Callers branch on the
// error's kind, never on its text.
func exitFor(err error) int {
	switch gateway.KindOf(err) {
	case gateway.KindBadInput, gateway.KindUnknown, gateway.KindMissing:
		return exitUsage
	case gateway.KindUntrusted, gateway.KindRefused, gateway.KindHeld, gateway.KindHidden:
		return exitRefused
	default:
		return exitFailure
	}
}

// reportErr prints err for a person: the message, then the remedy on its
// own line when the gateway has one. It returns the exit code for err.
func reportErr(w io.Writer, cmd string, err error) int {
	var ge *gateway.Error
	if errors.As(err, &ge) {
		fmt.Fprintf(w, "sluice %s: %s\n", cmd, clean(ge.Message))
		if !ge.Remedy.IsZero() {
			fmt.Fprintf(w, "  fix: %s\n", clean(ge.Remedy.String()))
		}
		if ge.Stderr != "" {
			fmt.Fprintf(w, "  the server's stderr (last lines):\n%s\n", indent(clean(strings.TrimRight(ge.Stderr, "\n")), "    "))
		}
	} else {
		fmt.Fprintf(w, "sluice %s: %s\n", cmd, clean(err.Error()))
	}
	return exitFor(err)
}

// usageErr prints a usage problem and how to get help; it returns exitUsage.
func usageErr(e *env, cmd, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "sluice %s: %s\nRun 'sluice help %s' for usage.\n", cmd, fmt.Sprintf(format, args...), cmd)
	return exitUsage
}

// parseFlags parses args with fs, allowing flags after positional
// arguments ("sluice find query --json"). Everything after "--" is
// positional. It returns the positional arguments in order. A request for
// help (-h, --help) returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagsOrExit parses flags and turns problems into an exit code: help is
// printed to stdout (exit 0), a bad flag is named on stderr (exit 2).
// ok is false when the command must return code.
func flagsOrExit(e *env, name string, fs *flag.FlagSet) (pos []string, code int, ok bool) {
	pos, err := parseFlags(fs, e.args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(e.stdout, commands[name].help)
		return nil, exitOK, false
	}
	if err != nil {
		return nil, usageErr(e, name, "%s", flagError(fs, e.args, err)), false
	}
	return pos, 0, true
}

var (
	flagUndefined = regexp.MustCompile(`^flag provided but not defined: -(.+)$`)
	flagNoValue   = regexp.MustCompile(`^flag needs an argument: -(.+)$`)
	flagBadValue  = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)
	// durationText is what time.ParseDuration reads; a value of this
	// shape that it refuses is too large.
	durationText = regexp.MustCompile(`^[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$`)
)

// errOutOfRange and errNotWhole are a number flag's refusals (see
// rangeValue); flagError words them with the flag's range.
var (
	errOutOfRange = errors.New("out of range")
	errNotWhole   = errors.New("not a whole number")
)

// rangeValue is a whole-number flag that accepts only min..max: a value
// outside is refused while the flags are parsed, and the message gives
// the range (see flagError).
type rangeValue[T int | int64] struct {
	p        *T
	min, max T
}

func (r *rangeValue[T]) Set(s string) error {
	// Base 0, as the flag package's own Int flags parse: 0x10, 0o20,
	// 0b101 and 1_000 keep working in scripts written for them.
	n, err := strconv.ParseInt(s, 0, 64)
	if errors.Is(err, strconv.ErrRange) {
		return errOutOfRange
	}
	if err != nil {
		return errNotWhole
	}
	if n < int64(r.min) || n > int64(r.max) || int64(T(n)) != n {
		return errOutOfRange
	}
	*r.p = T(n)
	return nil
}

func (r *rangeValue[T]) String() string {
	if r == nil || r.p == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*r.p), 10)
}

func (r *rangeValue[T]) Get() any { return *r.p }

func (r *rangeValue[T]) rangeText() string {
	return fmt.Sprintf("a whole number from %d to %d", r.min, r.max)
}

// intFlag defines a whole-number flag that accepts min..max only.
func intFlag(fs *flag.FlagSet, name string, def, min, max int) *int {
	p := new(int)
	*p = def
	fs.Var(&rangeValue[int]{p: p, min: min, max: max}, name, "")
	return p
}

// int64Flag is intFlag for an int64.
func int64Flag(fs *flag.FlagSet, name string, def, min, max int64) *int64 {
	p := new(int64)
	*p = def
	fs.Var(&rangeValue[int64]{p: p, min: min, max: max}, name, "")
	return p
}

// flagError says what the flag package found wrong in the words of the
// command line: the flag as typed (--name, not -name), what its value
// must look like, and the closest flag when the name is unknown.
func flagError(fs *flag.FlagSet, args []string, err error) string {
	msg := err.Error()
	typed := func(name string) string {
		for _, a := range args {
			if a == "--" {
				break
			}
			if n, _, _ := strings.Cut(a, "="); n == "-"+name || n == "--"+name {
				return n
			}
		}
		return "--" + name
	}
	if m := flagUndefined.FindStringSubmatch(msg); m != nil {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		out := "flag provided but not defined: " + typed(m[1])
		if near := gateway.Suggest(m[1], names); near != "" {
			out += "; did you mean --" + near + "?"
		}
		return out
	}
	if m := flagNoValue.FindStringSubmatch(msg); m != nil {
		return typed(m[1]) + " needs a value" + valueHint(fs.Lookup(m[1]))
	}
	if m := flagBadValue.FindStringSubmatch(msg); m != nil {
		f := fs.Lookup(m[2])
		hint := valueHint(f)
		switch {
		case m[3] == errOutOfRange.Error() || strings.HasSuffix(m[3], "value out of range"):
			hint = ": out of range" + strings.Replace(hint, ":", ";", 1)
		case f != nil && durationText.MatchString(m[1]):
			if _, ok := f.Value.(flag.Getter).Get().(time.Duration); ok {
				// Well formed, yet time.ParseDuration refused it: too long.
				hint = ": out of range; want a duration of at most 2562047h (about 292 years)"
			}
		}
		return fmt.Sprintf("invalid value %q for %s%s", m[1], typed(m[2]), hint)
	}
	return msg
}

// valueHint is what a flag's value must look like, by its type.
func valueHint(f *flag.Flag) string {
	if f == nil {
		return ""
	}
	if r, ok := f.Value.(interface{ rangeText() string }); ok {
		return ": want " + r.rangeText()
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch v := g.Get().(type) {
	case int, int64:
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if _, ok := v.(int); ok {
			lo, hi = math.MinInt, math.MaxInt
		}
		return fmt.Sprintf(": want a whole number from %d to %d", lo, hi)
	case uint, uint64:
		return ": want a whole number such as 10"
	case float64:
		return ": want a number such as 1.5"
	case time.Duration:
		return ": want a duration such as 30s, 2m or 1h30m"
	case bool:
		return ": want true or false (or the flag alone)"
	}
	return ""
}

// lockedWriter serializes writes: the gateway logs and relays server
// stderr from its own goroutines while the command writes too. It also
// holds back the log's routine lines for a moment (see logLine), so that
// a busy sluice serve does not make one write to stderr per call.
type lockedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte      // routine log lines not yet written
	timer   *time.Timer // writes pending when it fires
	armed   bool        // timer is set to fire
	closed  bool        // the command ended: nothing is held back any more
}

// logFlushDelay bounds how long a routine (info or debug) log line waits
// in a lockedWriter before it is written; maxPendingLog bounds how much
// waits.
const (
	logFlushDelay = 5 * time.Millisecond
	maxPendingLog = 32 << 10
)

// Write writes b at once, after any log lines held back (order is kept).
func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	return l.w.Write(b)
}

// logLine writes one log line: at once when urgent (a warning or an
// error, which may be the last thing the process says), when the writer is
// closed or when enough is pending; otherwise within logFlushDelay, in
// one write with the lines that came meanwhile.
func (l *lockedWriter) logLine(line []byte, urgent bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, line...)
	if urgent || l.closed || len(l.pending) >= maxPendingLog {
		l.flushLocked()
		return
	}
	if !l.armed {
		l.armed = true
		if l.timer == nil {
			l.timer = time.AfterFunc(logFlushDelay, l.Flush)
		} else {
			l.timer.Reset(logFlushDelay)
		}
	}
}

// Flush writes the log lines held back.
func (l *lockedWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
}

func (l *lockedWriter) flushLocked() {
	if l.armed {
		l.armed = false
		l.timer.Stop()
	}
	if len(l.pending) == 0 {
		return
	}
	_, _ = l.w.Write(l.pending) // as slog's handler: a failed log write is not the command's failure
	if cap(l.pending) > 4*maxPendingLog {
		l.pending = nil // do not keep the buffer of a burst of huge lines
	} else {
		l.pending = l.pending[:0]
	}
}

// close writes what is held back and holds nothing back from then on:
// the command has returned and the process is about to exit.
func (l *lockedWriter) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.flushLocked()
}

// file returns the *os.File behind w, if any (for TTY checks).
func (l *lockedWriter) file() any { return l.w }

// closeStderr closes every lockedWriter in the chain of w (safeOutput
// stacks one over an escaping writer over another).
func closeStderr(w io.Writer) {
	for {
		switch x := w.(type) {
		case *lockedWriter:
			x.close()
			w = x.w
		case escapingWriter:
			w = x.w
		default:
			return
		}
	}
}

// lockStderr wraps e.stderr once.
func lockStderr(e *env) {
	if _, ok := e.stderr.(*lockedWriter); !ok {
		e.stderr = &lockedWriter{w: e.stderr}
	}
}

// isTerminal reports whether a stream is a terminal: a character device
// other than /dev/null (no new module for an ioctl; see the help of trust).
// A variable so tests can pretend to be interactive.
var isTerminal = func(stream any) bool {
	if l, ok := stream.(*lockedWriter); ok {
		stream = l.file()
	}
	f, ok := stream.(*os.File)
	if !ok || f == nil {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	// /dev/null is a character device too, and the usual way to say "no
	// input" to a script: it must not count as a person at a terminal.
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(st, null) {
		return false
	}
	return true
}

// logLevel reads SLUICE_LOG_LEVEL (debug, info, warn, error; default warn).
func logLevel(stderr io.Writer) slog.Level {
	v := strings.ToLower(strings.TrimSpace(os.Getenv("SLUICE_LOG_LEVEL")))
	switch v {
	case "":
		return slog.LevelWarn
	case "debug":
		return slog.LevelDebug
	case "info":
		return slog.LevelInfo
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	fmt.Fprintf(stderr, "sluice: SLUICE_LOG_LEVEL=%q is not one of debug, info, warn, error; using warn\n", v)
	return slog.LevelWarn
}

// openGateway opens the gateway for one command: logs go to stderr as JSON
// at SLUICE_LOG_LEVEL; at debug, every server's stderr lines are relayed
// too. The caller must call the returned close function (it prints
// incomplete teardowns).
func openGateway(e *env, cmd, project string) (*gateway.Gateway, func(), int, bool) {
	return openGatewayProfile(e, cmd, project, "")
}

// profileHelp documents --profile for the commands that take it, in a
// flag list whose descriptions start at column 17 (profileHelpWide: 22).
const (
	profileHelp = `  --profile NAME only what profile NAME (profiles: in the user config)
                 exposes: its servers and capabilities`
	profileHelpWide = `  --profile NAME      only what profile NAME (profiles: in the user
                      config) exposes: its servers and capabilities`
)

// openGatewayProfile is openGateway narrowed to a declared profile ("" =
// none); an undeclared profile is refused.
func openGatewayProfile(e *env, cmd, project, profile string) (*gateway.Gateway, func(), int, bool) {
	lockStderr(e)
	if project != "" {
		if fi, err := os.Stat(project); err != nil {
			return nil, nil, usageErr(e, cmd, "--project %s: %v; pass the project root, the directory that holds .sluice/mcp.yaml", project, errors.Unwrap(err)), false
		} else if !fi.IsDir() {
			return nil, nil, usageErr(e, cmd, "--project %s is a file, not a directory; pass the project root, the directory that holds .sluice/mcp.yaml", project), false
		}
	}
	level := logLevel(e.stderr)
	lh := newLogHandler(e.stderr, level)
	opts := &gateway.Options{
		Profile:       profile,
		Project:       project,
		Logger:        slog.New(lh),
		ClientName:    "sluice",
		ClientVersion: versionString(),
	}
	if level <= slog.LevelDebug {
		opts.ServerStderr = lh.serverStderr()
	}
	if isTerminal(e.stderr) {
		// A person is at the terminal: a server that asks for a new
		// authorization (more scope, a new authorization server) gets it
		// in place, through the browser, as with `sluice auth`.
		stderr := e.stderr
		opts.Reauthorize = &gateway.ReauthorizeOptions{Open: func(server, u string) error {
			fmt.Fprintf(stderr, "Server %s asks sluice to authorize again. Open this URL:\n\n  %s\n\n", server, u)
			if err := openBrowser(u); err != nil {
				fmt.Fprintf(stderr, "(could not open a browser: %v)\n", err)
			}
			fmt.Fprintf(stderr, "Waiting for the browser to return (up to 5m) ...\n")
			return nil
		}}
	}
	g, err := gateway.Open(opts)
	if err != nil {
		return nil, nil, reportErr(e.stderr, cmd, err), false
	}
	lh.redactWith(g.RedactLog)
	closeFn := func() {
		for _, t := range g.Close() {
			fmt.Fprintf(e.stderr, "sluice %s: teardown of server %s was incomplete: process group %d survived (%s, stage %s); it may still be running\n",
				cmd, t.Server, t.Outcome.Pgid, t.Outcome.Reason, t.Outcome.Stage)
		}
	}
	return g, closeFn, 0, true
}

// interruptible returns a context cancelled by SIGINT or SIGTERM, so a
// command that launched servers still tears them down.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// failed reports err, or the interruption when ctx was cancelled by a
// signal (the error then only says the call was cancelled).
func failed(ctx context.Context, w io.Writer, cmd string, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintf(w, "sluice %s: interrupted; launched servers were stopped\n", cmd)
		return exitInterrupted
	}
	return reportErr(w, cmd, err)
}

// writeJSON writes v as indented JSON without HTML escaping.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// pretty indents raw JSON, keeping every number's text exactly; invalid
// JSON is returned as is.
func pretty(raw json.RawMessage, prefix string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, prefix, "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// shortDigest is the first 12 hex digits of a digest.
func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// jsonList renders strings as a JSON array (each one quoted, so spaces and
// odd characters stay visible).
func jsonList(ss []string) string {
	if len(ss) == 0 {
		return "[]"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(ss)
	return strings.TrimSpace(b.String())
}

// plural returns "1 tool" / "2 tools".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// clean makes text that came from a server or a repository safe to print
// on a terminal: control characters other than newline and tab (ESC
// sequences, carriage returns, C1 controls such as CSI U+009B and NEL
// U+0085), bidirectional overrides and isolates (U+202A-U+202E,
// U+2066-U+2069), zero-width and other invisible format characters
// (U+200B-U+200F, U+2060, U+FEFF, tag characters), line and paragraph
// separators and invalid UTF-8 are shown as \xNN, \uNNNN or \UNNNNNNNN
// escapes, so a tool description, a path or an error tail cannot rewrite
// the screen or make text read differently from what it is.
func clean(s string) string {
	return escapeText(s, true)
}

// cleanLine is clean for one table cell or one-line field: newline and
// tab are escaped too.
func cleanLine(s string) string {
	return escapeText(s, false)
}

func escapeText(s string, keepLayout bool) string {
	ok := true
	for i, r := range s {
		if r == utf8.RuneError && !validAt(s, i) || unsafeRune(r, keepLayout) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !validAt(s, i):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafeRune(r, keepLayout):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}

// validAt reports whether the U+FFFD at byte i of s is really written
// there (and is not a decoding error).
func validAt(s string, i int) bool {
	return strings.HasPrefix(s[i:], "\uFFFD")
}

// unsafeRune reports the runes clean escapes.
func unsafeRune(r rune, keepLayout bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !keepLayout
	case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
		return true
	}
	return r > 0x7f && unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs)
}

// escapingWriter passes output through clean (text) or, for JSON, writes
// the same runes as JSON \u escapes, which mean the same JSON value: the
// encoder leaves bidi, zero-width, C1 and separator characters raw inside
// strings, where a terminal or an editor would act on them. Each Write
// must hold whole runes (every caller writes whole strings).
type escapingWriter struct {
	w    io.Writer
	json bool
	// color: w is a stream colour may be written to (see term.go);
	// paint and styledTable write sluice's own styles to w directly.
	color bool
}

func (e escapingWriter) Write(p []byte) (int, error) {
	var out string
	if e.json {
		out = escapeJSON(string(p))
	} else {
		out = clean(string(p))
	}
	if _, err := io.WriteString(e.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapeJSON rewrites the unsafe runes of encoded JSON as \u escapes
// (surrogate pairs above U+FFFF). Outside strings JSON holds only ASCII
// structure and layout newlines, which are kept.
func escapeJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\n' || !unsafeRune(r, true) {
			b.WriteRune(r)
			continue
		}
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// safeOutput makes e's stdout and stderr escape what clean escapes, for
// the commands whose every line is a listing or a prompt (servers, trust,
// check): nothing from a declaration, a path or a server reaches the
// terminal raw, whichever field it came through.
func safeOutput(e *env, asJSON bool) {
	e.stdout = escapingWriter{w: e.stdout, json: asJSON, color: !asJSON && colorOn(e.color, e.stdout)}
	lockStderr(e)
	e.stderr = &lockedWriter{w: escapingWriter{w: e.stderr}}
}

// table writes tab-separated rows aligned, without trailing spaces.
func table(w io.Writer, rows []string) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, r)
	}
	tw.Flush()
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if l == "" {
			continue
		}
		fmt.Fprintln(w, strings.TrimRight(l, " \n"))
	}
}

// indent prefixes every line of s with p.
func indent(s, p string) string {
	return p + strings.ReplaceAll(s, "\n", "\n"+p)
}

// envLines renders a server's env as given, one KEY="value" per entry
// in key order; values are quoted so spaces and references are visible. A
// value Masked hid is KEY=(hidden), unquoted: it is no value the server
// gets.
func envLines(v gateway.ServerView) []string {
	keys := make([]string, 0, len(v.Env))
	for k := range v.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if val := v.Env[k]; val == gateway.Hidden {
			out = append(out, k+"="+val)
		} else {
			out = append(out, k+"="+strconv.Quote(val))
		}
	}
	return out
}

// grantText says in plain words which variable of the gateway's
// environment a server receives, and under which name.
func grantText(varName, as, via string) string {
	switch {
	case via == "passEnv":
		return fmt.Sprintf("receives your %s (passEnv copies it from your environment)", varName)
	case via == "header":
		return fmt.Sprintf("receives your %s in the HTTP header %s (headers %s references ${env:%s})", varName, as, as, varName)
	case as == varName:
		return fmt.Sprintf("receives your %s (env %s=${env:%s})", varName, as, varName)
	default:
		return fmt.Sprintf("receives your %s, under the name %s (env %s references ${env:%s})", varName, as, as, varName)
	}
}
