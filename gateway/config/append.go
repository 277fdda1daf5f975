package config

// This file adds server declarations to a declaration file for 'sluice
// import --write'. Like every edit of a file people maintain by hand, it
// splices text: the new entries go after the last line of the servers
// mapping, in the indentation its entries already use, and every other
// byte stays as it was. The result is parsed again before the caller
// writes it; an edit that would add an error is refused.

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// AppendServers returns src with the server entries render writes added
// to its servers mapping (created when absent). render gets the
// indentation of a server entry and the file's indentation unit.
func AppendServers(src []byte, file string, scope Scope, base string, render func(indent, unit string) string) ([]byte, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		out := append([]byte(nil), src...)
		return checkAppend(src, append(out, "servers:\n"+render("  ", "  ")...), file, scope, base)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, &AppendError{File: file, Message: "the file is not valid YAML, so nothing was added: " + err.Error()}
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &AppendError{File: file, Message: "the file is not a mapping of settings, so nothing was added"}
	}
	root := doc.Content[0]
	if root.Style&yaml.FlowStyle != 0 {
		return nil, &AppendError{File: file, Message: "the file is written in flow style ({...}); write it in block style to add servers"}
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	offset := func(line int) int { // start of 1-based line
		n := 0
		for i := 0; i < line-1 && i < len(lines); i++ {
			n += len(lines[i])
		}
		return n
	}
	withNL := func(b []byte) []byte {
		if len(b) > 0 && b[len(b)-1] != '\n' {
			return append(b, '\n')
		}
		return b
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "servers" {
			continue
		}
		indent, unit := "  ", "  "
		switch {
		case v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle != 0:
			return nil, &AppendError{File: file, Message: fmt.Sprintf("servers (line %d) is written in flow style ({...}); write it in block style to add servers", k.Line)}
		case v.Kind == yaml.MappingNode && len(v.Content) > 0:
			indent = strings.Repeat(" ", v.Content[0].Column-1)
			if ev := v.Content[1]; ev.Kind == yaml.MappingNode && len(ev.Content) > 0 && ev.Content[0].Column > v.Content[0].Column {
				unit = strings.Repeat(" ", ev.Content[0].Column-v.Content[0].Column)
			}
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		default:
			return nil, &AppendError{File: file, Message: fmt.Sprintf("servers (line %d) is not a mapping of servers, so nothing was added", k.Line)}
		}
		// The mapping ends where the next top-level key begins, less the
		// blank and column-0 comment lines above that key.
		at := len(src)
		if i+2 < len(root.Content) {
			next := root.Content[i+2].Line
			for next > 1 {
				l := bytes.TrimRight(lines[next-2], "\r\n")
				if len(bytes.TrimSpace(l)) == 0 || l[0] == '#' {
					next--
					continue
				}
				break
			}
			at = offset(next)
		}
		head := withNL(append([]byte(nil), src[:at]...))
		out := append(head, render(indent, unit)...)
		out = append(out, src[at:]...)
		return checkAppend(src, out, file, scope, base)
	}
	out := withNL(append([]byte(nil), src...))
	return checkAppend(src, append(out, "servers:\n"+render("  ", "  ")...), file, scope, base)
}

func checkAppend(before, after []byte, file string, scope Scope, base string) ([]byte, error) {
	if len(after) > MaxFileBytes {
		return nil, &AppendError{File: file, Message: fmt.Sprintf("the file would be larger than %d KiB", MaxFileBytes>>10)}
	}
	_, _, bd := Parse(before, file, scope, base)
	_, _, ad := Parse(after, file, scope, base)
	old := map[string]int{}
	for _, d := range bd {
		if d.Severity == SeverityError {
			old[d.Field+"\x00"+d.Message]++
		}
	}
	var added []string
	for _, d := range ad {
		if d.Severity != SeverityError {
			continue
		}
		key := d.Field + "\x00" + d.Message
		if old[key] > 0 {
			old[key]--
			continue
		}
		added = append(added, d.String())
	}
	if len(added) > 0 {
		return nil, &AppendError{File: file, Message: "the servers would not load as written, so nothing was added:\n  " + strings.Join(added, "\n  ")}
	}
	return after, nil
}
