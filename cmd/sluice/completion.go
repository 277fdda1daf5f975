package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"

	"sluice/gateway"
)

func init() {
	register("completion", &command{
		summary: "print a shell completion script (bash, zsh or fish)",
		help: `Usage: sluice completion bash|zsh|fish

Prints a completion script for the shell. It completes commands, their
flags, server ids (review, refresh, trust, untrust, find --server), capability names
from the recorded catalogs (call, describe), client names (install,
uninstall, import --from) and files (run, import). Completing reads the
declarations and catalogs; it never launches a server.

  bash:  source <(sluice completion bash)        (e.g. in ~/.bashrc)
  zsh:   source <(sluice completion zsh)         (e.g. in ~/.zshrc)
  fish:  sluice completion fish | source         (or save it to
         ~/.config/fish/completions/sluice.fish)

The scripts ask 'sluice completion --list line WORDS...' (the words typed
after "sluice", the last one being completed) for candidates.

Exit status:
  0  printed
  2  no shell, or one other than bash, zsh and fish
`,
		run: runCompletion,
	})
}

// bashCompletion reads candidates line by line (never through compgen -W,
// which expands $(...) in its words, nor an unquoted $(...), which splits
// and globs them) and has readline quote file names as it inserts them: a
// file a repository names "x;id" is completed as x\;id.
const bashCompletion = `# bash completion for sluice
_sluice() {
	local cur words w
	cur="${COMP_WORDS[COMP_CWORD]}"
	words="$(sluice completion --list line "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)"
	COMPREPLY=()
	if [ "$words" = "__files__" ]; then
		compopt -o filenames 2>/dev/null
		while IFS= read -r w; do
			COMPREPLY+=("$w")
		done < <(compgen -f -- "$cur")
	else
		while IFS= read -r w; do
			[[ -n "$w" && "$w" == "$cur"* ]] && COMPREPLY+=("$w")
		done <<< "$words"
	fi
}
complete -o default -F _sluice sluice
`

const zshCompletion = `#compdef sluice
# zsh completion for sluice
_sluice() {
	local -a cands descs
	local out l
	out="$(sluice completion --list described "${(@)words[2,CURRENT]}" 2>/dev/null)"
	if [[ "$out" == "__files__" ]]; then
		_files
		return
	fi
	for l in "${(@f)out}"; do
		[[ -z "$l" ]] && continue
		if [[ "$l" == *$'\t'* ]]; then
			descs+=("${l%%$'\t'*}:${l#*$'\t'}")
		else
			cands+=("$l")
		fi
	done
	(( ${#descs} )) && _describe -t commands 'sluice command' descs
	(( ${#cands} )) && compadd -a cands
	return 0
}
compdef _sluice sluice
`

const fishCompletion = `# fish completion for sluice
function __sluice_complete
	set -l toks (commandline -opc)
	set -e toks[1]
	set -l cur (commandline -ct)
	set -l out (sluice completion --list described $toks "$cur" 2>/dev/null)
	if test "$out" = "__files__"
		__fish_complete_path "$cur"
	else
		printf "%s\n" $out
	end
end
complete -c sluice -f -a '(__sluice_complete)'
`

func runCompletion(e *env) int {
	if len(e.args) >= 2 && e.args[0] == "--list" {
		return listCompletions(e, e.args[1], e.args[2:])
	}
	if len(e.args) != 1 {
		return usageErr(e, "completion", "want one shell: bash, zsh or fish")
	}
	switch e.args[0] {
	case "bash":
		io.WriteString(e.stdout, bashCompletion)
	case "zsh":
		io.WriteString(e.stdout, zshCompletion)
	case "fish":
		io.WriteString(e.stdout, fishCompletion)
	case "-h", "--help":
		fmt.Fprint(e.stdout, commands["completion"].help)
	default:
		msg := "unknown shell %q; want bash, zsh or fish"
		if near := gateway.Suggest(e.args[0], []string{"bash", "zsh", "fish"}); near != "" {
			msg += " (did you mean " + near + "?)"
		}
		return usageErr(e, "completion", msg, e.args[0])
	}
	return exitOK
}

var flagPat = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s+(--[a-z][a-z0-9-]*)`) })

// flagsOf lists the flags a command's help documents.
func flagsOf(cmd string) []string {
	c, ok := commands[cmd]
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range flagPat().FindAllStringSubmatch(c.help, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

// listCompletions prints candidates, one a line; nothing on any problem
// (a completion must never print an error into the shell).
//
// Kinds: "line" takes the words after "sluice" up to the one being
// completed (the last, maybe empty) and prints candidates; "described"
// does the same with each command's summary after a tab (fish and zsh
// show it). "commands" and "words CMD PREV CUR" are what scripts printed
// by older versions ask.
func listCompletions(e *env, kind string, args []string) int {
	w := e.stdout
	described := false
	switch kind {
	case "commands":
		printWords(w, commandNames())
		return exitOK
	case "line", "described":
		described = kind == "described"
		args = lineWords(args)
		if len(args) == 0 {
			args = []string{""}
		}
		cur := args[len(args)-1]
		if len(args) == 1 {
			if strings.HasPrefix(cur, "-") {
				printWords(w, globalFlagNames)
				return exitOK
			}
			if described {
				for _, n := range commandNames() {
					fmt.Fprintf(w, "%s\t%s\n", n, commands[n].summary)
				}
			} else {
				printWords(w, commandNames())
			}
			return exitOK
		}
		args = []string{args[0], args[len(args)-2], cur}
	case "words":
	default:
		return exitOK
	}
	if len(args) < 2 {
		return exitOK
	}
	cmd, prev := args[0], args[1]
	cur := ""
	if len(args) > 2 {
		cur = args[2]
	}
	if strings.HasPrefix(cur, "-") {
		printWords(w, append(flagsOf(cmd), globalFlagNames...))
		return exitOK
	}

	switch prev {
	case "--server":
		printWords(w, completionServers(e))
		return exitOK
	case "--expose":
		printWords(w, completionCapabilities(e))
		return exitOK
	case "--from":
		printWords(w, gateway.ClientNames())
		return exitOK
	case "--config", "--project", "--input", "--token-file":
		fmt.Fprintln(w, "__files__")
		return exitOK
	}
	switch cmd {
	case "call", "describe":
		printWords(w, completionCapabilities(e))
	case "review", "refresh", "trust", "untrust", "update", "remove", "enable", "disable", "tools":
		printWords(w, completionServers(e))
	case "install", "uninstall":
		printWords(w, gateway.ClientNames())
	case "run", "import":
		fmt.Fprintln(w, "__files__")
	case "help":
		printWords(w, commandNames())
	case "completion":
		printWords(w, []string{"bash", "zsh", "fish"})
	}
	return exitOK
}

// globalFlagNames are the flags every command takes (see term.go).
var globalFlagNames = []string{"--color=always", "--color=auto", "--color=never", "--no-color", "--no-progress", "--progress=always", "--progress=auto", "--progress=never"}

// lineWords drops the global flags from a command line's words (all but
// the last, which is being completed), so the command is found wherever
// they were typed. bash splits "--color=never" into "--color", "=",
// "never": the "=" and its value go too.
func lineWords(words []string) []string {
	if len(words) == 0 {
		return nil
	}
	out := make([]string, 0, len(words))
	last := len(words) - 1
	for i := 0; i < last; i++ {
		wd := words[i]
		if wd == "--" {
			out = append(out, words[i:last]...)
			break
		}
		if wd == "=" && len(out) > 0 && isGlobalFlag(out[len(out)-1]) {
			out = out[:len(out)-1]
			i++ // the value
			continue
		}
		if isGlobalFlag(wd) {
			if !strings.Contains(wd, "=") && i+1 < last && words[i+1] == "=" {
				out = append(out, wd) // dropped with its "=" and value
			}
			continue
		}
		out = append(out, wd)
	}
	return append(out, words[last])
}

func isGlobalFlag(w string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
	if !strings.HasPrefix(w, "-") {
		return false
	}
	switch name {
	case "color", "progress", "no-color", "no-progress":
		return true
	}
	return false
}

func commandNames() []string {
	out := make([]string, 0, len(commands))
	for n := range commands {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func printWords(w io.Writer, words []string) {
	for _, s := range words {
		fmt.Fprintln(w, s)
	}
}

func quietGateway(e *env) *gateway.Gateway {
	g, err := gateway.Open(&gateway.Options{})
	if err != nil {
		return nil
	}
	return g
}

func completionServers(e *env) []string {
	g := quietGateway(e)
	if g == nil {
		return nil
	}
	defer g.Close()
	var out []string
	for _, s := range g.Servers().Servers {
		out = append(out, s.ID)
	}
	return out
}

func completionCapabilities(e *env) []string {
	g := quietGateway(e)
	if g == nil {
		return nil
	}
	defer g.Close()
	ctx, cancel := interruptible()
	defer cancel()
	res, err := g.Find(ctx, gateway.FindRequest{})
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range res.Tools {
		out = append(out, t.Capability)
	}
	return out
}
