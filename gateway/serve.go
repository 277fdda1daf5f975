package gateway

// This file is the process-level 'sluice serve': signals, filter loading
// before the first request, the stdio or HTTP front, and teardown.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"sluice/gateway/front"
)

// ServeOptions configures Serve. The zero value serves gateway mode over
// stdio on os.Stdin and os.Stdout.
type ServeOptions struct {
	HTTP     string // listen address (host:port); "" = stdio
	Flat     bool   // flat mode instead of gateway mode
	NoPrefix bool   // flat mode: keep upstream names that do not collide
	// Server serves that one declared (and trusted) server alone, in flat
	// mode with its own tool names; Flat and NoPrefix are then implied.
	Server      string
	AllowRemote bool   // HTTP: allow a non-loopback listen address
	Token       string // HTTP: required bearer token ("" = none)
	Name        string // serverInfo.name; default "sluice"
	Version     string // serverInfo.version
	Logger      *slog.Logger
	// ShutdownTimeout bounds the drain on SIGTERM, SIGINT, stdin EOF or
	// ctx; default 10s.
	ShutdownTimeout time.Duration
	// OnListen receives the bound HTTP address.
	OnListen func(addr string)
	// Stdin and Stdout carry stdio frames; nil = os.Stdin, os.Stdout.
	Stdin  io.Reader
	Stdout io.Writer
	// NoSignals: the caller handles SIGTERM and SIGINT (cancel ctx).
	NoSignals bool
	// HTTPLimits bound slow and greedy HTTP clients (read and idle
	// timeouts, connections per client, sessions); zero = front's defaults.
	HTTPLimits HTTPLimits
}

// HTTPLimits are the HTTP front's bounds on slow and greedy clients (see
// front.HTTPLimits).
type HTTPLimits = front.HTTPLimits

// Serve serves g as an MCP server until ctx ends, stdin reaches EOF
// (stdio), or SIGTERM or SIGINT arrives; it then drains within
// ShutdownTimeout and tears every upstream server down (the gateway is
// closed when Serve returns). Stdout carries protocol frames only.
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
		o.Flat, o.NoPrefix = true, true
	}
	metrics := front.NewMetrics(nil)
	fe := newFrontend(g, &frontendOptions{Flat: o.Flat, Metrics: metrics, Server: o.Server})
	fo := &front.Options{
		Mode:            front.ModeGateway,
		NoPrefix:        o.NoPrefix,
		Name:            o.Name,
		Version:         o.Version,
		Logger:          o.Logger,
		Metrics:         metrics,
		AllowRemote:     o.AllowRemote,
		Token:           o.Token,
		ShutdownTimeout: o.ShutdownTimeout,
		NoSignals:       o.NoSignals,
		HTTPLimits:      o.HTTPLimits,
	}
	if o.Flat {
		fo.Mode = front.ModeFlat
	}
	if fo.Logger == nil {
		fo.Logger = g.log
	}
	if !o.NoSignals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
		defer stop()
	}
	// Filters compile here, once, before the first request: a filter
	// that cannot load refuses the start (fail closed) instead of failing
	// calls later or paying the compile on the request path.
	if err := g.LoadFilters(ctx); err != nil {
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
	var err error
	if o.HTTP == "" {
		in, out := o.Stdin, o.Stdout
		if in == nil {
			in = os.Stdin
		}
		if out == nil {
			out = os.Stdout
		}
		err = front.ServeStdio(ctx, fe, fo, in, out)
	} else {
		err = front.ServeHTTP(ctx, o.HTTP, fe, fo, func(a net.Addr) {
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
