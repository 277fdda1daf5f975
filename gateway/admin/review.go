package admin

import (
	"errors"
	"net/http"
	"strings"
)

// The Review page: a server's tools compared with their reviewed baseline,
// the line diff 'sluice review' prints, and accepting the change. The
// accept form carries the review's digest (baseline and listing), so a
// listing that changes after the page was rendered, or another review
// accepted meanwhile, is refused with 409 and the review as it is now,
// never accepted unseen.

func init() {
	funcs["difflines"] = diffLines
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
		out = append(out, diffLine{Class: c, Text: l})
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
// digest the form carries.
func (h *Handler) reviewPost(w http.ResponseWriter, r *http.Request, id string, api bool) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	digest := r.PostFormValue("digest")
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
