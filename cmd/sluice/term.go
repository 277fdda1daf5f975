package main

// Terminal output: colour and progress.
//
// # Why colour is decided per stream, and NO_COLOR wins over a terminal
//
// Colour marks what a person scans for: a review's removed and added
// lines, a server's trust and run state. It is only for a person at a
// terminal, so it is on when the stream it is written to is one, and off
// for pipes, files and TERM=dumb. NO_COLOR (any non-empty value, see
// no-color.org) turns it off; CLICOLOR_FORCE or FORCE_COLOR (non-empty,
// not 0) turn it on for a pipe; --color=always|never, given anywhere
// before a "--", beats them all. JSON output is never coloured, and text a
// server or a repository wrote is escaped (see clean) before it is painted,
// so nothing but sluice's own sequences reaches the terminal.
//
// # Why progress goes to stderr, and only for a person
//
// Refreshing many servers, waiting for a browser to finish OAuth and
// reading client configs take long enough that silence looks like a hang.
// Progress is drawn on stderr, never stdout, so a pipe or --json stays
// exactly the answer. On a terminal it is one line redrawn in place and
// erased at the end; --progress=always prints it as plain lines instead
// (for a CI log or a terminal that cannot erase: TERM=dumb), and
// --progress=never turns it off. Without a terminal and without the flag
// nothing is printed.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Modes of --color and --progress.
const (
	modeAuto   = "auto"
	modeAlways = "always"
	modeNever  = "never"
)

// globalFlags takes --color[=WHEN], --no-color, --progress[=WHEN] and
// --no-progress out of args, wherever they appear before a "--" (after
// it, arguments belong to a server's command line). A bad WHEN is an
// error naming the flag.
func globalFlags(args []string) (rest []string, color, progress string, err error) {
	color, progress = modeAuto, modeAuto
	if len(args) >= 2 && args[0] == "completion" && args[1] == "--list" {
		return args, color, progress, nil // the words of a command line being completed
	}
	rest = make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		// -flag and --flag, as the flag package reads them.
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") {
			name = ""
		}
		switch name {
		case "color", "progress":
			if !hasVal {
				val = modeAlways
			}
			if val != modeAuto && val != modeAlways && val != modeNever {
				return nil, "", "", fmt.Errorf("--%s=%q: want auto, always or never", name, val)
			}
			if name == "color" {
				color = val
			} else {
				progress = val
			}
		case "no-color":
			color = modeNever
		case "no-progress":
			progress = modeNever
		default:
			rest = append(rest, a)
		}
	}
	return rest, color, progress, nil
}

// getenv is os.Getenv; a variable so tests can set a process's view.
var getenv = os.Getenv

// colorOn decides colour for a stream under mode (see the file comment).
func colorOn(mode string, stream any) bool {
	switch mode {
	case modeAlways:
		return true
	case modeNever:
		return false
	}
	if getenv("NO_COLOR") != "" {
		return false
	}
	for _, v := range []string{"CLICOLOR_FORCE", "FORCE_COLOR"} {
		if s := getenv(v); s != "" && s != "0" {
			return true
		}
	}
	if getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(stream)
}

// Styles: SGR parameters.
const (
	styleBold   = "1"
	styleRed    = "31"
	styleGreen  = "32"
	styleYellow = "33"
	styleCyan   = "36"
)

// sgr wraps s in one style and a reset.
func sgr(style, s string) string {
	if style == "" || s == "" {
		return s
	}
	return "\x1b[" + style + "m" + s + "\x1b[0m"
}

// colorWriter unwraps w to the writer colour may be written to: an
// escapingWriter with colour on (text goes through clean first). ok is
// false when w does not take colour.
func colorWriter(w io.Writer) (raw io.Writer, ok bool) {
	if ew, is := w.(escapingWriter); is && ew.color && !ew.json {
		return ew.w, true
	}
	return nil, false
}

// paint writes s in style when w takes colour, else as plain text through
// w (which escapes it).
func paint(w io.Writer, style, s string) {
	if raw, ok := colorWriter(w); ok && style != "" {
		// Style each line on its own, so a pager or a cut line never
		// carries the colour on.
		lines := strings.SplitAfter(clean(s), "\n")
		for _, l := range lines {
			body := strings.TrimSuffix(l, "\n")
			io.WriteString(raw, sgr(style, body)+l[len(body):])
		}
		return
	}
	io.WriteString(w, s)
}

// styledTable is table with a style per cell (style returns "" for none):
// cells are aligned on their text, then painted, so colour never shifts a
// column. Without colour the output is table's, byte for byte.
func styledTable(w io.Writer, rows [][]string, style func(row, col int, cell string) string) {
	widths := map[int]int{}
	for _, r := range rows {
		for c, cell := range r[:max(len(r)-1, 0)] {
			widths[c] = max(widths[c], utf8.RuneCountInString(clean(cell)))
		}
	}
	raw, colored := colorWriter(w)
	for i, r := range rows {
		// The last non-empty cell ends the line: no trailing spaces.
		last := len(r) - 1
		for last > 0 && r[last] == "" {
			last--
		}
		var line strings.Builder
		for c, cell := range r[:last+1] {
			cell = clean(cell)
			st := ""
			if colored && style != nil {
				st = style(i, c, cell)
			}
			line.WriteString(sgr(st, cell))
			if c < last {
				line.WriteString(strings.Repeat(" ", widths[c]+2-utf8.RuneCountInString(cell)))
			}
		}
		line.WriteString("\n")
		if colored {
			io.WriteString(raw, line.String())
		} else {
			io.WriteString(w, line.String())
		}
	}
}

// trustStyle colours a trust state; runStyle a run state.
func trustStyle(s string) string {
	switch s {
	case "trusted":
		return styleGreen
	case "stale":
		return styleYellow
	case "untrusted":
		return styleRed
	}
	return ""
}

func runStyle(s string) string {
	switch s {
	case "ready":
		return styleGreen
	case "crash-loop":
		return styleRed
	case "backoff", "disabled":
		return styleYellow
	}
	return ""
}

// progressTick is how often a terminal's progress line is redrawn.
const progressTick = 100 * time.Millisecond

// reporter draws progress on stderr (see the file comment). A nil
// reporter, or one that is off, does nothing, so callers never branch.
type reporter struct {
	w     io.Writer
	cmd   string
	live  bool // a terminal: one line redrawn in place
	mu    sync.Mutex
	what  string
	start time.Time
	drawn bool
	done  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

// newReporter returns the command's progress reporter, nil when progress
// is off: --progress=never, or auto without a terminal on stderr.
// TERM=dumb, or --progress=always without a terminal, prints plain lines.
func newReporter(e *env, cmd string) *reporter {
	w := rawStream(e.stderr)
	term := isTerminal(w)
	switch e.progress {
	case modeNever:
		return nil
	case modeAlways:
	default:
		if !term {
			return nil
		}
	}
	r := &reporter{w: w, cmd: cmd, live: term && getenv("TERM") != "dumb", start: time.Now(), done: make(chan struct{})}
	if r.live {
		r.wg.Add(1)
		go r.loop()
	}
	return r
}

// rawStream is w without the escaping safeOutput adds (the reporter
// writes its own control sequences and cleans what it prints): the
// innermost lockedWriter, so its writes still take turns with the logs'.
func rawStream(w io.Writer) io.Writer {
	for {
		switch x := w.(type) {
		case *lockedWriter:
			if inner, ok := x.w.(escapingWriter); ok {
				w = inner.w
				continue
			}
			return x
		case escapingWriter:
			w = x.w
			continue
		}
		return w
	}
}

// spinner frames.
const spinFrames = `|/-\`

func (r *reporter) loop() {
	defer r.wg.Done()
	t := time.NewTicker(progressTick)
	defer t.Stop()
	for i := 0; ; i++ {
		r.mu.Lock()
		if r.what != "" {
			fmt.Fprintf(r.w, "\r\033[K%c %s %s", spinFrames[i%len(spinFrames)], r.what, elapsed(time.Since(r.start)))
			r.drawn = true
		}
		r.mu.Unlock()
		select {
		case <-r.done:
			return
		case <-t.C:
		}
	}
}

// elapsed is a short duration: 0.4s, 12s, 3m05s.
func elapsed(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// Set replaces what the progress line says (text sluice wrote; anything
// from outside must be cleaned by the caller). Plain mode prints it as a
// line.
func (r *reporter) Set(format string, args ...any) {
	if r == nil {
		return
	}
	s := cleanLine(fmt.Sprintf(format, args...))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.what == s {
		return
	}
	r.what = s
	if !r.live {
		fmt.Fprintf(r.w, "sluice %s: %s\n", r.cmd, s)
		return
	}
	// Drawn at once, so even work shorter than a tick is shown.
	fmt.Fprintf(r.w, "\r\033[K%c %s %s", spinFrames[0], r.what, elapsed(time.Since(r.start)))
	r.drawn = true
}

// Note prints a line that stays (the progress line is redrawn below it).
func (r *reporter) Note(format string, args ...any) {
	if r == nil {
		return
	}
	s := clean(fmt.Sprintf(format, args...))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live && r.drawn {
		fmt.Fprint(r.w, "\r\033[K")
		r.drawn = false
	}
	fmt.Fprintf(r.w, "sluice %s: %s\n", r.cmd, s)
}

// Stop ends the progress and erases its line; safe to call twice.
func (r *reporter) Stop() {
	if r == nil {
		return
	}
	r.once.Do(func() {
		close(r.done)
		r.wg.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.live && r.drawn {
			fmt.Fprint(r.w, "\r\033[K")
			r.drawn = false
		}
	})
}

// globalHelp documents the flags every command takes.
const globalHelp = `
Flags of every command (anywhere before a "--"):
  --color=WHEN     colour on stdout: auto (a terminal, unless NO_COLOR is
                   set or TERM=dumb), always or never; --no-color = never
  --progress=WHEN  progress of long work on stderr: auto (a terminal),
                   always (plain lines where stderr is no terminal) or
                   never; --no-progress = never
`

// printFileDiff prints the line diff of a file edit (import, install,
// uninstall): "+" lines green, "-" lines red where w takes colour.
func printFileDiff(w io.Writer, diff string) {
	for _, l := range strings.SplitAfter(diff, "\n") {
		body := strings.TrimSuffix(l, "\n")
		st := ""
		switch {
		case strings.HasPrefix(body, "+"):
			st = styleGreen
		case strings.HasPrefix(body, "-"):
			st = styleRed
		}
		paint(w, st, body)
		io.WriteString(w, l[len(body):])
	}
}
