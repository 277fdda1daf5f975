package gateway

// This file is the process-level 'sluice serve': signals, filter loading
// before the first request, the stdio or HTTP front, and teardown.

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"sluice/gateway/admin"
	"sluice/gateway/front"
	"sluice/gateway/proc"
)

// ServeOptions configures Serve. The zero value serves gateway mode over
// stdio on os.Stdin and os.Stdout.
type ServeOptions struct {
	HTTP string // listen address (host:port); "" = stdio
	// Server serves that one declared (and trusted) server alone, in flat
	// mode with its own tool names; Front.Mode and Front.NoPrefix are then
	// implied.
	Server string
	// Front configures the MCP server surface as it is: mode, names,
	// HTTP checks, token, limits, timeouts, signals. Serve supplies its
	// Metrics, and its Logger when nil (the gateway's).
	Front FrontOptions
	// OnListen receives the bound HTTP address.
	OnListen func(addr string)
	// Dashboard, when set, serves the dashboard (gateway/admin): under
	// /admin/ on the HTTP listener, or on Dashboard.Addr (required for
	// stdio). Calls without elicitation then wait for a decision there.
	Dashboard *DashboardOptions
	// Stdin and Stdout carry stdio frames; nil = os.Stdin, os.Stdout.
	Stdin  io.Reader
	Stdout io.Writer
	// Expose adds capability globs (SERVER__TOOL) to the configured
	// expose lists: those tools are served directly beside the gateway
	// tools (see expose.go). Checked by CheckExpose before serving.
	Expose []string
}

// FrontOptions are the MCP server surface's options (front.Options).
type FrontOptions = front.Options

// HTTPLimits are the HTTP front's bounds on slow and greedy clients (see
// front.HTTPLimits).
type HTTPLimits = front.HTTPLimits

// Tool surfaces of FrontOptions.Mode.
const (
	ModeGateway = front.ModeGateway // find, describe, call, execute, read_result
	ModeFlat    = front.ModeFlat    // every capability as its own tool
	// ModeAuto is flat while the trusted tool definitions total at most
	// FrontOptions.AutoFlatBytes, gateway mode above (direct tools cost
	// an agent less than the gateway's own tools only while they are
	// few). It is decided at start and again whenever a catalog changes,
	// with a margin against flapping; the agent is told by
	// notifications/tools/list_changed.
	ModeAuto = front.ModeAuto
)

// DefaultAutoFlatBytes is ModeAuto's budget for flat tool definitions:
// about 85 tools of a typical size, where the gateway tools begin to cost
// the agent less.
const DefaultAutoFlatBytes = front.DefaultAutoFlatBytes

// Serve serves g as an MCP server until ctx ends, stdin reaches EOF
// (stdio), or SIGTERM, SIGINT or SIGHUP (its terminal closed; neither when
// started ignored, see stopSignals) arrives; it
// then drains within ShutdownTimeout and tears every upstream server down
// (the gateway is closed when Serve returns). Stdout carries protocol frames only.
func Serve(ctx context.Context, g *Gateway, o ServeOptions) error {
	if o.Server != "" {
		// Refused before anything is served: stdout stays empty.
		v, err := g.server(o.Server)
		if err != nil {
			g.Close()
			return err
		}
		if !v.Trusted() {
			g.Close()
			return untrustedErr(v)
		}
	}
	metrics := front.NewMetrics(nil)
	// The gateway's series (per upstream, filter outcomes, server states)
	// are recorded only where /metrics serves them: over HTTP. On stdio
	// nothing could read them, and recording them is work on every call.
	var exported *front.Metrics
	if o.HTTP != "" {
		exported = metrics
		g.setMetrics(metrics)
	}
	defer g.logSummary() // after the teardown: the counters are final
	fo := o.Front
	fo.Metrics = metrics
	if fo.Logger == nil {
		fo.Logger = g.log
	}
	if o.Server != "" {
		fo.Mode, fo.NoPrefix = front.ModeFlat, true
	}
	if o.Server == "" {
		if err := g.CheckExpose(o.Expose); err != nil {
			g.Close()
			return err
		}
	}
	fe := newFrontend(g, &frontendOptions{Flat: fo.Mode == front.ModeFlat || fo.Mode == ModeAuto, Metrics: exported, Server: o.Server, Expose: o.Expose})
	if fo.NoPrefix && (fo.Mode == "" || fo.Mode == ModeGateway) && !fe.exposing() {
		fe.Close()
		return &Error{Kind: KindBadInput, Message: "--no-prefix applies to direct tools: flat and auto mode's, or exposed ones, and no expose glob is in force",
			Remedy: fixText("drop --no-prefix, use --mode flat or auto, or expose tools (--expose GLOB, or expose: in the config)")}
	}
	var surface atomic.Value // the mode served now (ModeAuto switches)
	surface.Store(fo.Mode)
	fo.OnMode = func(m front.Mode) { surface.Store(m) }
	modeText := func() string {
		m := surface.Load().(front.Mode)
		if o.Front.Mode == ModeAuto {
			return "auto (" + string(m) + ")"
		}
		return string(m)
	}
	if !fo.NoSignals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, stopSignals()...)
		defer stop()
		// The front must not take the signals again: its own Notify
		// would un-ignore a SIGINT the process started with ignored.
		fo.NoSignals = true
	}
	// Filters are checked here, before the first request: a filter that
	// cannot load refuses the start (fail closed) instead of failing calls
	// later. Each loads again from the compilation cache when a result
	// first needs it (see CheckFilters).
	if err := g.CheckFilters(ctx); err != nil {
		fe.Close()
		if ctx.Err() != nil {
			return nil
		}
		fo.Logger.Error("refusing to serve: a filter failed to load", "error", err.Error())
		return err
	}
	fe.Prepare(ctx)
	if ctx.Err() != nil {
		fe.Close()
		return nil
	}
	// The live filter status for 'sluice filter list' (a unix socket
	// under the state directory); serving goes on without it.
	if stopStatus, err := g.ServeStatus(ctx); err != nil {
		fo.Logger.Warn("no live filter status for 'sluice filter list'", "error", err.Error())
	} else {
		defer stopStatus()
	}
	if o.Dashboard != nil {
		transport := "stdio"
		if o.HTTP != "" {
			transport = "http"
		}
		d, err := newDashboard(g, o.Dashboard, func() map[string]any {
			return map[string]any{"transport": transport, "mode": modeText(), "http": o.HTTP, "dashboard": d0URL(g)}
		})
		if err != nil {
			fe.Close()
			return err
		}
		d.exposure = fe.exposure // this serve's set, its --expose included
		defer d.approvals.Close()
		if o.Dashboard.Addr != "" {
			stop, err := listenDashboard(ctx, g, d, o.Dashboard)
			if err != nil {
				fe.Close()
				return err
			}
			defer stop()
		} else if o.HTTP != "" {
			fo.Admin = d.handler
			onListen := o.OnListen
			o.OnListen = func(addr string) {
				base := dashboardBase(addr)
				d.approvals.SetURL(base)
				fo.Logger.Info("serving the dashboard", "url", base+admin.Path+"/")
				if o.Dashboard.OnListen != nil {
					o.Dashboard.OnListen(base, d.loginURL(base))
				}
				if onListen != nil {
					onListen(addr)
				}
			}
		}
	}
	// Start-up is over: the executable's pages only it touched need not
	// stay mapped (see proc.ReleaseStartupPages).
	if n, err := proc.ReleaseStartupPages(); err != nil {
		fo.Logger.Debug("start-up pages kept", "error", err.Error())
	} else {
		fo.Logger.Debug("start-up pages released", "bytes", n)
	}
	var err error
	if o.HTTP == "" {
		in, out := o.Stdin, o.Stdout
		if in == nil {
			in = os.Stdin
		}
		if out == nil {
			out = os.Stdout
		}
		err = front.ServeStdio(ctx, fe, &fo, in, out)
	} else {
		err = front.ServeHTTP(ctx, o.HTTP, fe, &fo, func(a net.Addr) {
			if o.OnListen != nil {
				o.OnListen(a.String())
			}
		})
	}
	cerr := fe.Close() // idempotent: front closes it too, except when it never started
	if err == nil {
		err = cerr
	}
	var be *front.BindError
	var oe *front.OptionError
	switch {
	case err == nil:
		return nil
	case KindOf(err) != "":
		return err
	case errors.As(err, &be):
		remedy := "use a free loopback address such as 127.0.0.1:0"
		if errors.Is(err, front.ErrRemoteBind) {
			remedy = "listen on 127.0.0.1, or pass --allow-remote (and set a token with --token-file or SLUICE_TOKEN)"
		}
		return &Error{Kind: KindBadInput, Message: be.Error(), Remedy: fixText(remedy), Err: err}
	case errors.As(err, &oe):
		return &Error{Kind: KindBadInput, Message: oe.Error(), Err: err}
	}
	return &Error{Kind: KindGateway, Message: "serving failed: " + err.Error(), Err: err}
}

// d0URL is the dashboard's Activity address, "" before it listens.
func d0URL(g *Gateway) string {
	if d := g.dashboard(); d != nil {
		return d.approvals.URL()
	}
	return ""
}

// stopSignals are the signals that end serve and dashboard: SIGTERM, and
// SIGINT and SIGHUP unless the process was started with them ignored.
//
// # Why not always SIGHUP and SIGINT
//
// Notify un-ignores a signal the process started with ignored, so a
// 'nohup sluice serve' (SIGHUP ignored) or a background job of a
// non-interactive shell (SIGINT ignored) would end when the terminal
// closes or the shell is interrupted, which is what starting it that way
// asks not to happen.
func stopSignals() []os.Signal {
	sigs := []os.Signal{syscall.SIGTERM}
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}
