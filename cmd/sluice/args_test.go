package main

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHelpRefusesExtraArguments: 'sluice help COMMAND' takes one command
// (and filter one of its subcommands); anything more is refused, not
// ignored, and an unknown command gets a suggestion.
func TestHelpRefusesExtraArguments(t *testing.T) {
	newWorld(t)
	for _, name := range commandNames() {
		want(t, sluice(t, "", "help", name), exitOK, "Usage: sluice "+name)
		for _, args := range [][]string{{"help", name, "extra"}, {"--help", name, "extra"}, {"help", name, "--json"}} {
			r := sluice(t, "", args...)
			want(t, r, exitUsage, "sluice help: unexpected argument \""+args[2]+"\"; help takes one command: sluice help "+name)
			if r.stdout != "" {
				t.Errorf("sluice %v printed help anyway:\n%s", args, r)
			}
		}
	}
	want(t, sluice(t, "", "help", "filter", "test"), exitOK, "Usage: sluice filter test")
	want(t, sluice(t, "", "help", "filter", "test", "x"), exitUsage, `unexpected argument "x"`)
	want(t, sluice(t, "", "filter", "help", "x"), exitUsage, `unexpected argument "x" after help`)
	want(t, sluice(t, "", "filter", "lst"), exitUsage, "did you mean list?")
	want(t, sluice(t, "", "help", "sevre"), exitUsage, `sluice help: no command "sevre"; did you mean serve?`)
}

// sluiceTimed runs the binary with stdin empty, giving up after a minute.
func sluiceTimed(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sluiceBin, args...)
	ownGroup(cmd)
	cmd.Cancel = func() error { killGroup(cmd); return nil }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("sluice %v did not end within a minute:\n%s", args, errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running sluice %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// flagEntry is a flag at the start of a line of a help text's flag list.
var flagEntry = regexp.MustCompile(`(?m)^ {2,}(--[a-z][a-z0-9-]*)`)

// TestEveryCommandsFlagsAreWhatItsHelpSays: every command refuses a flag
// it does not have (exit 2, naming it), and accepts every flag its help
// lists (whatever else it then says about the missing arguments).
func TestEveryCommandsFlagsAreWhatItsHelpSays(t *testing.T) {
	w := newWorld(t)
	t.Setenv("HOME", w.root) // import and install read client files under HOME
	for _, name := range commandNames() {
		r := sluiceTimed(t, name, "--no-such-flag")
		want(t, r, exitUsage, "no-such-flag")
		if name == "filter" {
			continue // its flags are its subcommands'
		}
		seen := map[string]bool{}
		for _, m := range flagEntry.FindAllStringSubmatch(commands[name].help, -1) {
			f := m[1]
			if seen[f] || slices.Contains([]string{"--color", "--progress", "--no-color", "--no-progress"}, f) {
				continue
			}
			seen[f] = true
			switch name {
			case "serve": // serves until stdin ends: an address it cannot listen on stops it
				r = sluiceTimed(t, name, f, "-", "--http", "not an address")
			case "dashboard": // serves until a signal: likewise
				r = sluiceTimed(t, name, f, "-", "not an address")
			default:
				r = sluiceTimed(t, name, f)
			}
			if strings.Contains(r.stderr, "flag provided but not defined: "+f) {
				t.Errorf("sluice help %s lists %s, which %s does not take:\n%s", name, f, name, r)
			}
		}
	}
}

// TestEveryHelpDocumentsItsExitStatus: every command's help has an "Exit
// status:" section whose first line is 0.
func TestEveryHelpDocumentsItsExitStatus(t *testing.T) {
	for _, name := range commandNames() {
		h := commands[name].help
		_, after, ok := strings.Cut(h, "\nExit status:\n")
		if !ok || !strings.HasPrefix(strings.TrimLeft(after, " "), "0 ") {
			t.Errorf("sluice help %s has no exit status section starting with 0:\n%s", name, h)
		}
	}
}

// TestFlagErrorsSpeakTheCommandLine: a flag problem names the flag as it
// was typed, says what its value must look like, and suggests the flag
// meant by a typo.
func TestFlagErrorsSpeakTheCommandLine(t *testing.T) {
	newWorld(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"find", "--jsno"}, "sluice find: flag provided but not defined: --jsno; did you mean --json?"},
		{[]string{"check", "-projct", "x"}, "flag provided but not defined: -projct; did you mean --project?"},
		{[]string{"find", "--limit"}, "sluice find: --limit needs a value: want a whole number from 0 to 9223372036854775807"},
		{[]string{"find", "--limit", "ten"}, `invalid value "ten" for --limit: want a whole number from 0 to 9223372036854775807`},
		{[]string{"call", "fx__echo", "--timeout=soon"}, `invalid value "soon" for --timeout: want a duration such as 30s`},
		{[]string{"find", "--json=maybe"}, `invalid value "maybe" for --json: want true or false`},
		{[]string{"add", "gh", "--env"}, "sluice add: --env needs a value"},
	} {
		r := sluice(t, "", c.args...)
		want(t, r, exitUsage, c.want)
		if strings.Contains(r.stderr, "parse error") || strings.Contains(r.stderr, "for flag -") {
			t.Errorf("sluice %v: the flag package's wording:\n%s", c.args, r)
		}
	}
}

// TestNumberFlagsNameTheirRange: every whole-number and duration flag
// of every command refuses 0 (where 0 is not allowed), a negative, a
// huge and a non-number value with exit 2, saying which and giving the
// range it accepts; none is taken for "not a whole number" when it is
// one, out of range.
func TestNumberFlagsNameTheirRange(t *testing.T) {
	newWorld(t)
	h := "r-00000000000000000000000000000000"
	huge := "99999999999999999999"
	type row struct {
		args []string
		want string
	}
	var rows []row
	for _, f := range []struct {
		args      []string
		flag      string
		zeroOK    bool
		rangeText string
	}{
		{[]string{"filter", "bench", "builtin:redact"}, "--n", false, "want a whole number from 1 to 1000000"},
		{[]string{"find"}, "--limit", true, "want a whole number from 0 to 9223372036854775807"},
		{[]string{"refresh"}, "--parallel", false, "want a whole number from 1 to 32"},
		{[]string{"result", h}, "--offset", true, "want a whole number from 0 to 9223372036854775807"},
		{[]string{"result", h}, "--length", false, "want a whole number from 1 to 1048568"},
		{[]string{"serve", "--http", "127.0.0.1:0"}, "--max-conns-per-client", true, "want a whole number from 0 to 2147483647"},
		{[]string{"serve", "--http", "127.0.0.1:0"}, "--max-sessions", true, "want a whole number from 0 to 2147483647"},
	} {
		rows = append(rows,
			row{append(slices.Clone(f.args), f.flag, "-1"), `invalid value "-1" for ` + f.flag + ": out of range; " + f.rangeText},
			row{append(slices.Clone(f.args), f.flag, huge), `invalid value "` + huge + `" for ` + f.flag + ": out of range; " + f.rangeText},
			row{append(slices.Clone(f.args), f.flag, "ten"), `invalid value "ten" for ` + f.flag + ": " + f.rangeText},
			row{append(slices.Clone(f.args), f.flag+"=1.5"), `invalid value "1.5" for ` + f.flag + ": " + f.rangeText})
		if !f.zeroOK {
			rows = append(rows, row{append(slices.Clone(f.args), f.flag, "0"), `invalid value "0" for ` + f.flag + ": out of range; " + f.rangeText})
		}
	}
	for _, d := range []struct {
		args []string
		flag string
		neg  string // what a negative value gets
	}{
		{[]string{"auth", "x"}, "--timeout", "--timeout must be a positive duration such as 5m, got -5s"},
		{[]string{"call", "x__y"}, "--timeout", "--timeout must be positive, got -5s"},
		{[]string{"filter", "bench", "builtin:redact"}, "--timeout", "--timeout must be between 0 and 1m"},
		{[]string{"run", "-"}, "--timeout", "--timeout must be positive, got -5s"},
		{[]string{"serve"}, "--read-timeout", "--read-timeout must be a positive duration such as 30s"},
		{[]string{"serve"}, "--idle-timeout", "--idle-timeout must be a positive duration such as 2m"},
		{[]string{"serve"}, "--approval-timeout", "--approval-timeout must be a positive duration such as 2m"},
		{[]string{"serve"}, "--slow-call", "--slow-call must be a duration such as 5s (0 turns the warning off)"},
	} {
		rows = append(rows,
			row{append(slices.Clone(d.args), d.flag, "-5s"), d.neg},
			row{append(slices.Clone(d.args), d.flag, "9999999999h"), `invalid value "9999999999h" for ` + d.flag + ": out of range; want a duration of at most 2562047h"},
			row{append(slices.Clone(d.args), d.flag, "soon"), `invalid value "soon" for ` + d.flag + ": want a duration such as 30s, 2m or 1h30m"},
			row{append(slices.Clone(d.args), d.flag, "30"), `invalid value "30" for ` + d.flag + ": want a duration such as 30s, 2m or 1h30m"})
	}
	rows = append(rows,
		row{[]string{"auth", "x", "--timeout", "0"}, "--timeout must be a positive duration such as 5m, got 0s"},
		row{[]string{"serve", "--procs", "0"}, "--procs 0 is out of range: want auto or a whole number of threads from 1 to 256"},
		row{[]string{"serve", "--procs", "100000"}, "--procs 100000 is out of range: want auto or a whole number of threads from 1 to 256"},
		row{[]string{"serve", "--procs", huge}, "--procs " + huge + " is out of range: want auto or a whole number of threads from 1 to 256"},
		row{[]string{"serve", "--procs", "-2"}, "--procs -2 is out of range"},
		row{[]string{"serve", "--procs", "many"}, `--procs must be auto or a whole number of threads from 1 to 256, such as 1 or 2, not "many"`})
	for _, c := range rows {
		r := sluice(t, "", c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("sluice %q: want exit 2 and %q on stderr, got %s", c.args, c.want, r)
		}
	}
}

// TestCapabilityWithTheWrongSeparator: a declared server's id joined to the
// tool by '.', '_' or '/' is refused with the SERVER__TOOL name meant,
// before anything is launched.
func TestCapabilityWithTheWrongSeparator(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	for _, args := range [][]string{{"call", "fx.echo", "text=hi"}, {"call", "fx_echo"}, {"describe", "fx/echo"}} {
		r := sluice(t, "", args...)
		want(t, r, exitUsage, `"`+args[1]+`" is not a capability name (SERVER__TOOL, with two underscores); did you mean fx__echo?`)
	}
	want(t, sluice(t, "", "call", "fxecho"), exitUsage, `"fxecho" is not a capability name`)
	noChildren(t, "a refused capability")
}
