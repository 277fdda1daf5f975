package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The Review page: a server's tools compared with their reviewed baseline,
// the line diff 'sluice review' prints, and accepting the change. The
// accept form carries the review's digest (baseline and listing), so a
// listing that changes after the page was rendered, or another review
// accepted meanwhile, is refused with 409 and the review as it is now,
// never accepted unseen. The JSON API takes the same fields from a form or
// from a JSON object body ({"digest": "sha256:..."}; the trust API also
// {"program": ...}), with the CSRF token in its header.

func init() {
	funcs["difflines"] = diffLines
	funcs["visible"] = Visible
}

// diffLine is one line of a review diff with its class: hdr (a tool's
// block), field, del, add or same.
type diffLine struct {
	Class string
	Text  string
}

// diffLines splits a review diff into classed lines for the page.
func diffLines(diff string) []diffLine {
	var out []diffLine
	for _, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		if l == "" {
			continue
		}
		c := "same"
		t := strings.TrimLeft(l, " ")
		switch {
		case !strings.HasPrefix(l, " "):
			c = "hdr"
		case strings.HasPrefix(t, "- "):
			c = "del"
		case strings.HasPrefix(t, "+ "):
			c = "add"
		case strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "    ") && strings.HasSuffix(l, ":"):
			c = "field"
		}
		out = append(out, diffLine{Class: c, Text: Visible(l)})
	}
	return out
}

// reviewGet answers GET /servers/ID/review and /api/servers/ID/review.
func (h *Handler) reviewGet(w http.ResponseWriter, r *http.Request, id string, api bool) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	rv, err := h.b.Review(ctx, id)
	if api {
		if err != nil {
			apiErr(w, http.StatusNotFound, err)
			return
		}
		writeJSON(w, http.StatusOK, rv)
		return
	}
	h.renderReview(w, id, http.StatusOK, rv, "", err)
}

// reviewPost answers POST /servers/ID/review: accept the review whose
// digest the form (or the API's JSON body) carries.
func (h *Handler) reviewPost(w http.ResponseWriter, r *http.Request, id string, api bool) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	fields, err := postedFields(r, "digest")
	if err != nil {
		if api {
			apiErr(w, http.StatusBadRequest, err)
			return
		}
		rv, _ := h.b.Review(ctx, id)
		h.renderReview(w, id, http.StatusBadRequest, rv, "", err)
		return
	}
	digest := fields["digest"]
	if digest == "" {
		err := errors.New("the review form lacks the digest of the review you viewed; open the server's review page and accept there")
		if api {
			apiErr(w, http.StatusBadRequest, err)
			return
		}
		rv, _ := h.b.Review(ctx, id)
		h.renderReview(w, id, http.StatusBadRequest, rv, "", err)
		return
	}
	rv, err := h.b.AcceptReview(ctx, id, digest)
	code := http.StatusOK
	switch {
	case errors.Is(err, ErrReviewChanged):
		code = http.StatusConflict
	case err != nil:
		code = http.StatusBadRequest
	}
	if api {
		if err != nil {
			apiErr(w, code, err)
			return
		}
		writeJSON(w, http.StatusOK, rv)
		return
	}
	flash := ""
	if err == nil {
		flash = "Accepted: the tools shown are the reviewed baseline of " + id + "; they are callable."
		// Show the review as it is after accepting (no change).
		if now, nerr := h.b.Review(ctx, id); nerr == nil {
			rv = now
		}
	} else if code == http.StatusConflict {
		// The person sees what is there now, to review again.
		if now, nerr := h.b.Review(ctx, id); nerr == nil {
			rv = now
		}
	}
	h.renderReview(w, id, code, rv, flash, err)
}

func (h *Handler) renderReview(w http.ResponseWriter, id string, code int, rv *ToolReview, flash string, err error) {
	pg := page{Title: "review " + id, Flash: flash, Data: map[string]any{"ID": id, "Review": rv}}
	if err != nil {
		pg.Error = err.Error()
	}
	if code != http.StatusOK {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(code)
	}
	h.render(w, "review", pg)
}

// postedFields returns the named fields of a POST, from a JSON object
// body (Content-Type application/json, as API clients send) or else from
// the form. A JSON body must be one object whose members are among names
// and are strings; anything else is an error that says what is wrong.
func postedFields(r *http.Request, names ...string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/json" {
		for _, n := range names {
			out[n] = r.PostFormValue(n)
		}
		return out, nil
	}
	want := `{` + strings.Join(quoteAll(names), `: "...", `) + `: "..."}`
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return nil, fmt.Errorf("the body is not a JSON object %s", want)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("the body is not a JSON object %s: something follows it", want)
	}
	for k, v := range obj {
		if !slices.Contains(names, k) {
			return nil, fmt.Errorf("the body has an unknown member %q; it is a JSON object %s", k, want)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("the body's %q is not a string; it is a JSON object %s", k, want)
		}
		out[k] = s
	}
	return out, nil
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}

// blankLooking: characters that are not format characters yet draw
// nothing or change how the character before them looks: variation
// selectors, the combining grapheme joiner, Hangul fillers, the braille
// blank.
func blankLooking(r rune) bool {
	switch {
	case r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef:
		return true
	}
	switch r {
	case 0x034f, 0x115f, 0x1160, 0x3164, 0xffa0, 0x2800:
		return true
	}
	return false
}

// Visible shows the characters of a server's text that would make a line
// read differently from what it is as escapes: C0 and C1 controls but
// tab, bidirectional overrides and isolates, zero-width and other
// invisible format characters, characters that draw blank or alter the
// one before (blankLooking), line and paragraph separators, and invalid
// UTF-8 (tab and newline stay). html/template escapes markup, not these;
// the tools page shows descriptions through it too.
func Visible(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029 || blankLooking(r):
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
