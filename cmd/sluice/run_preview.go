package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// A script's value that a context filter shortened is, for a model, the
// first part of the value, a note and a handle to the whole. A person at
// 'sluice run' wants the answer to read, the fact that it was shortened,
// and the command that shows all of it — not 16 KiB of one JSON line. So
// the shortened text is shown indented (a JSON prefix is indented as far
// as it goes, without parsing it whole) and only its first screenful; the
// rest is one 'sluice result HANDLE' away. --json keeps the MCP result.

// Bounds of the preview of a shortened answer.
const (
	previewLines = 40
	previewBytes = 4 << 10
)

// printShortened renders a shortened run result for a person and returns
// the handle of the stored whole value ("" when the result names none).
func printShortened(w io.Writer, raw json.RawMessage, term bool) (handle string, err error) {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
			URI  string `json:"uri"`
			Name string `json:"name"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("the result is not a CallToolResult object: %v", err)
	}
	body := func(s string) string {
		if term {
			return clean(s)
		}
		return s
	}
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			t := c.Text
			if strings.HasPrefix(strings.TrimSpace(t), "[sluice:") {
				fmt.Fprintln(w, body(strings.TrimRight(t, "\n"))) // the filter's note, whole
				continue
			}
			shown, more := preview(indentJSONPrefix(t))
			fmt.Fprintln(w, body(shown))
			if more > 0 {
				fmt.Fprintf(w, "… %s more of the shortened answer not shown here\n", sizeText(more))
			}
		case "resource_link":
			fmt.Fprintf(w, "[resource link] %s", clean(c.URI))
			if c.Name != "" {
				fmt.Fprintf(w, " (%s)", clean(c.Name))
			}
			fmt.Fprintln(w)
			if h, ok := strings.CutPrefix(c.URI, "sluice://results/"); ok && handle == "" {
				handle = h
			}
		default:
			fmt.Fprintf(w, "[%s content]\n", clean(c.Type))
		}
	}
	return handle, nil
}

// preview is the first previewLines lines (at most previewBytes, cut at a
// rune) of s, and how many bytes of s it leaves out.
func preview(s string) (string, int) {
	s = strings.TrimRight(s, "\n")
	cut := len(s)
	lines := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			lines++
			if lines == previewLines {
				cut = i
				break
			}
		}
	}
	if cut > previewBytes {
		cut = previewBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
	}
	return s[:cut], len(s) - cut
}

// indentJSONPrefix indents s when it starts as JSON (an object or an
// array), as json.Indent would, as far as s goes: a shortened value is a
// prefix, which json.Indent refuses. Text after the JSON ends (the
// filter's "… [N bytes cut]") is kept on its own line. Anything else is
// returned as it is.
func indentJSONPrefix(s string) string {
	t := strings.TrimLeft(s, " \t\r\n")
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return s
	}
	var b strings.Builder
	depth := 0
	inStr, esc := false, false
	newline := func() {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat("  ", depth))
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if inStr {
			b.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
			b.WriteByte(c)
		case '{', '[':
			b.WriteByte(c)
			if i+1 < len(t) && (t[i+1] == '}' || t[i+1] == ']') {
				b.WriteByte(t[i+1]) // {} and [] stay on one line
				i++
				break
			}
			depth++
			newline()
		case '}', ']':
			depth = max(depth-1, 0)
			newline()
			b.WriteByte(c)
			if depth == 0 {
				// The value ended: keep what follows as it is.
				if rest := strings.TrimSpace(t[i+1:]); rest != "" {
					b.WriteString("\n" + rest)
				}
				return b.String()
			}
		case ',':
			b.WriteByte(c)
			newline()
		case ':':
			b.WriteString(": ")
		case ' ', '\t', '\n', '\r':
			// JSON layout: replaced by ours.
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
