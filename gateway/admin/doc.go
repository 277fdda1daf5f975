// Package admin is sluice's dashboard: server-rendered pages (Servers,
// Tools, Filters, Results, Activity, Metrics) under /admin/, the JSON API
// behind each of them under /admin/api/ (which 'sluice status' reads), the
// approvals queue that calls without elicitation wait in, and the audit log
// of approval decisions.
//
// It owns its gate, its templates and its embedded assets. It imports no
// package of sluice but gateway/internal/urlmask (the one rule for what
// of a url is hidden, shared with the CLI and remote's errors, and
// itself a leaf): the gateway root implements Backend and hands over
// plain values and raw JSON, so the dashboard can never reach around
// admission or the filters. It must never import the gateway root (the
// layering test enforces it).
//
// # Why the gate fails closed
//
// The dashboard can trust servers and approve calls, so it is more
// powerful than /mcp. Every request must come from a loopback peer, and a
// request relayed by a proxy (Forwarded or X-Forwarded-For: it would look
// loopback) is refused too, however the listener was bound: 'sluice serve
// --allow-remote' opens /mcp, not the dashboard. Only Options.Remote
// (--admin-remote) opens it, on purpose. Host and Origin are checked as on
// /mcp (DNS rebinding). With a token, a login form asks for it once and an
// HttpOnly, SameSite=Strict session cookie (random, kept in memory, 12 h)
// carries the login; nothing but the login page and the static assets is
// served before. Every POST needs the per-process CSRF token (header
// X-CSRF-Token or form field _csrf), 403 without.
//
// # Why a token even on loopback
//
// Loopback is not one user: every local account, and every program any of
// them runs, can connect to 127.0.0.1. So the gateway never serves the
// dashboard without a token: when the operator gave none it makes one per
// process (NewToken) and prints LoginURL on its standard error only. The
// token rides in the URL's fragment, which browsers never send to a
// server (no access logs, no Referer); the login page's script moves it
// into the login form, posts it, and takes it out of the address bar and
// history. The URL a model is shown (Approvals.URL) never carries it.
//
// # Why no inline script and no other origin
//
// The CSP allows 'self' only: no inline script or style, no CDN, no
// framing. The pages work as plain HTML forms; assets/app.js only draws
// the charts, reloads the Activity page when the pending approvals change
// and submits a login link's token. Values of env and headers are masked everywhere (a reference
// such as ${env:NAME} is shown, it holds no value), the trust prompt
// included.
//
// # Why uPlot, vendored
//
// The Metrics page needs small time-series charts and nothing else. uPlot
// (MIT, about 50 KB minified, no dependencies) draws them on a canvas. It
// is vendored from its npm package: assets/vendor holds the package.json
// and package-lock.json that pin it and the two files copied from its
// dist/ (scripts/vendor-dashboard.sh refreshes them). Nothing is fetched
// at build or run time; go:embed puts every asset in the binary.
//
// # Why approvals wait, bounded
//
// A call that needs approval from a client without elicitation used to
// fail at once. Now it waits in the queue (Approvals.Ask) for a decision
// on the Activity page, at most ApprovalOptions.Timeout (2 minutes by
// default) and never past the caller's context; the queue holds at most 64
// requests. A script's set of capabilities is one request, bound to the
// sha256 of the script. Every decision, timeout and cancellation is one
// JSON line in the audit log (0600, refusing symlinks, rotated to .1 at 4
// MiB so it stays bounded) and in memory for the Activity page.
//
// # Why the audit log is shared by processes, under a lock
//
// Trust, untrust and tool reviews are decided on the command line as well
// as on the dashboard, and a person auditing wants one log. So every
// process of a state directory appends to the same file (AuditLog), the
// command line included (via "cli"), and the Activity page reads the
// file's tail rather than its own memory. Appends take the lock the
// gateway hands in (its cross-process file lock, on <file>.lock): the
// size check, the rotation and the write are one step, so two writers
// never both rotate (which would lose a file's worth of lines) and a line
// never lands inside another. A line a dying writer left unterminated is
// ended before the next one, so it costs only itself.
package admin
