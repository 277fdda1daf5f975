package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

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

The scripts ask 'sluice completion --list words CMD PREV' for candidates.
`,
		run: runCompletion,
	})
}

const bashCompletion = `# bash completion for sluice
_sluice() {
	local cur prev words
	cur="${COMP_WORDS[COMP_CWORD]}"
	prev="${COMP_WORDS[COMP_CWORD-1]}"
	if [ "$COMP_CWORD" -eq 1 ]; then
		words="$(sluice completion --list commands 2>/dev/null)"
	else
		words="$(sluice completion --list words "${COMP_WORDS[1]}" "$prev" "$cur" 2>/dev/null)"
	fi
	if [ "$words" = "__files__" ]; then
		COMPREPLY=($(compgen -f -- "$cur"))
	else
		COMPREPLY=($(compgen -W "$words" -- "$cur"))
	fi
}
complete -o default -F _sluice sluice
`

const zshCompletion = `#compdef sluice
# zsh completion for sluice
_sluice() {
	local -a words_
	local out
	if (( CURRENT == 2 )); then
		out="$(sluice completion --list commands 2>/dev/null)"
	else
		out="$(sluice completion --list words "${words[2]}" "${words[CURRENT-1]}" "${words[CURRENT]}" 2>/dev/null)"
	fi
	if [[ "$out" == "__files__" ]]; then
		_files
		return
	fi
	words_=(${(f)out})
	compadd -a words_
}
compdef _sluice sluice
`

const fishCompletion = `# fish completion for sluice
function __sluice_words
	set -l toks (commandline -opc)
	set -l cur (commandline -ct)
	if test (count $toks) -le 1
		sluice completion --list commands 2>/dev/null
	else
		sluice completion --list words $toks[2] $toks[-1] "$cur" 2>/dev/null
	end
end
complete -c sluice -f -a '(set -l w (__sluice_words); if test "$w" = "__files__"; __fish_complete_path (commandline -ct); else; printf "%s\n" $w; end)'
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

var flagPat = regexp.MustCompile(`(?m)^\s+(--[a-z][a-z0-9-]*)`)

// flagsOf lists the flags a command's help documents.
func flagsOf(cmd string) []string {
	c, ok := commands[cmd]
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range flagPat.FindAllStringSubmatch(c.help, -1) {
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
func listCompletions(e *env, kind string, args []string) int {
	w := e.stdout
	switch kind {
	case "commands":
		printWords(w, commandNames())
		return exitOK
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
		printWords(w, flagsOf(cmd))
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
