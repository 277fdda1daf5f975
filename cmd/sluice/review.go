package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"sluice/gateway"
)

func init() {
	register("review", &command{
		summary: "show how a server's tools changed since they were reviewed, and accept the change",
		help: `Usage: sluice review SERVER [--accept [--digest D]] [--json] [--project DIR]

sluice records a baseline of every server's tools: a hash per tool over its
name, title, description, input and output schemas and annotations, and one
for the whole set. The first listing of a server is its baseline (for a
project server: the first listing after 'sluice trust'). When a later
listing differs, the changed, added and renamed tools are held: they cannot
be called and are left out of find, describe, flat and code mode until you
review the change here.

review compares the server's known listing (the running server's, else the
recorded catalog; nothing is launched) with its baseline and prints, per
tool, what changed:

  changed  NAME    a line diff (- reviewed, + now) of each changed field
  renamed  A -> B  the same definition under a new name
  added    NAME    the new tool's fields
  removed  NAME    gone from the listing

--accept records the listing shown as the new baseline, so its tools are
callable again. To see a fresher listing first, run
'sluice find --server SERVER --refresh'. The dashboard (serve --http or
--admin) shows the same review on its Servers page and accepts it there,
bound to the digest of what the page showed (the "digest" of --json).

Per server, onToolChange in the declaration chooses the policy: hold
(default), warn (report the change, keep the tools callable) or accept
(every listing becomes the baseline; user declarations only).

Flags:
  --accept       record the listing as the reviewed baseline (and the
                 acceptance in <state dir>/audit.jsonl, the audit log the
                 dashboard's Activity page shows)
  --digest D     with --accept: only if the review is still the one whose
                 "digest" (review --json) is D, so what a script or a person
                 looked at earlier is what gets accepted
  --json         print the review as JSON
  --project DIR  the project root (default: found from the working directory)

Exit status:
  0  nothing changed, or the change was accepted
  1  the baseline could not be written
  2  bad input: flags, no such server, no recorded catalog
  3  the tools changed and --accept was not given
  4  the server is untrusted or stale, or --digest is no longer the review's
     (nothing was accepted)
`,
		run: runReview,
	})
}

func runReview(e *env) int {
	fs := flag.NewFlagSet("review", flag.ContinueOnError)
	accept := fs.Bool("accept", false, "")
	asJSON := fs.Bool("json", false, "")
	project := fs.String("project", "", "")
	digest := fs.String("digest", "", "")
	pos, code, ok := flagsOrExit(e, "review", fs)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(e, "review", "want exactly one server id, got %d arguments", len(pos))
	}
	if *digest != "" && !*accept {
		return usageErr(e, "review", "--digest binds an acceptance: pass it with --accept")
	}
	safeOutput(e, *asJSON)
	g, closeFn, code, ok := openGateway(e, "review", *project)
	if !ok {
		return code
	}
	defer closeFn()
	var r *gateway.Review
	var err error
	if *digest != "" {
		r, err = g.AcceptReview(pos[0], *digest)
	} else {
		r, err = g.ReviewTools(pos[0], *accept)
	}
	if err != nil {
		return reportErr(e.stderr, "review", err)
	}
	if *asJSON {
		if err := writeJSON(e.stdout, r); err != nil {
			return reportErr(e.stderr, "review", err)
		}
	} else {
		printReview(e, r)
	}
	if r.Change != nil && !r.Accepted {
		return exitChanged
	}
	return exitOK
}

// exitChanged: review found a change it was not asked to accept.
const exitChanged = 3

func printReview(e *env, r *gateway.Review) {
	w := e.stdout
	src := "the recorded catalog"
	if r.Provenance == gateway.ProvLive {
		src = "the running server's listing"
	}
	switch {
	case r.Change == nil && r.Baseline == "":
		fmt.Fprintf(w, "%s has no reviewed baseline yet; %s\n", r.Server, map[bool]string{true: "recorded " + src + " as its baseline.", false: "its next listing becomes the baseline (or run with --accept)."}[r.Accepted])
		return
	case r.Change == nil:
		fmt.Fprintf(w, "%s: no change: %s matches the baseline (%s, %s).\n", r.Server, src, r.Baseline, r.Reviewed)
		return
	}
	paint(w, styleYellow, fmt.Sprintf("%s: %s", r.Server, r.Change.Summary))
	fmt.Fprintln(w)
	if r.Baseline != "" {
		fmt.Fprintf(w, "compared: %s with the baseline recorded %s (%s)\n", src, r.Reviewed, r.Baseline)
	}
	if r.Change.Unreadable != "" {
		fmt.Fprintf(w, "the baseline cannot be read (%s); --accept records the listing as a new one\n", r.Change.Unreadable)
	}
	if r.Diff != "" {
		fmt.Fprintln(w)
		for _, l := range strings.SplitAfter(r.Diff, "\n") {
			body := strings.TrimSuffix(l, "\n")
			paint(w, diffStyle(body), body)
			io.WriteString(w, l[len(body):])
		}
	}
	fmt.Fprintln(w)
	if r.Accepted {
		paint(w, styleGreen, fmt.Sprintf("Accepted: the listing above is the reviewed baseline of %s; its tools are callable.", r.Server))
		fmt.Fprintln(w)
		return
	}
	held := "Held tools stay uncallable"
	switch {
	case r.Change.Instructions && len(r.Change.Held) == 0:
		held = "Agents get the reviewed instructions"
	case r.Change.Instructions:
		held = "Held tools stay uncallable and agents get the reviewed instructions"
	}
	fmt.Fprintf(w, "%s until you accept: sluice review %s --accept\n", held, r.Server)
}

// diffStyle colours one line of a review diff: a tool's heading bold, a
// field name cyan, a removed line red, an added line green.
func diffStyle(l string) string {
	t := strings.TrimLeft(l, " ")
	switch {
	case l == "":
		return ""
	case !strings.HasPrefix(l, " "):
		return styleBold
	case strings.HasPrefix(l, "    - "):
		return styleRed
	case strings.HasPrefix(l, "    + "):
		return styleGreen
	case strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "    ") && strings.HasSuffix(t, ":"):
		return styleCyan
	}
	return ""
}
