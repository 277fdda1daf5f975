// Package trace is sluice's OpenTelemetry tracing: spans for an agent's
// request and its parts (admission, filters, the upstream call, a
// script's calls), exported over OTLP/HTTP when the standard
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set, and the W3C traceparent that links them to the agent and to the
// upstream servers.
//
// It is the only user of go.opentelemetry.io/otel and its SDK and OTLP
// exporter, and none of their types appear in its API: callers hold a
// *Tracer and *Span and pass attributes as plain key/value pairs. It
// imports no package of this module.
//
// # Why a nil Tracer is the "off" state
//
// Tracing off must cost nothing measurable on the call path. With no
// endpoint set, Open returns a nil *Tracer; Start on it returns the
// context unchanged and a nil *Span, and every Span method on nil returns
// at once: no allocation, no interface call, no global provider.
//
// # Why OTLP over HTTP and not gRPC
//
// The HTTP exporter needs no long-lived connection and works with every
// collector; the gRPC exporter would pull a second transport stack into
// the process for the same spans.
//
// # What the exporter costs a command that does not trace
//
// The official OTLP/HTTP exporter links gRPC all the same: its
// configuration package shares gRPC's credential and dial-option types
// with the gRPC exporter, and the collector service package it encodes
// requests with carries the gRPC stubs and the grpc-gateway handlers
// (upstream opentelemetry-go issue 2579). No official package exports
// OTLP/HTTP without them: the slim proto module has no gRPC, but cannot be
// linked beside the full one that the generic otlptrace exporter's Client
// interface is written in. Their package initialisation runs in every
// sluice process, tracing or not; measured on `sluice version`, about
// 1 ms of CPU of 6 to 8, and 3.4 MB of the 41 MB binary. The exporter stays
// the official one: an OTLP client of our own would save that at the price
// of owning the protocol's encoding, retry and configuration rules.
package trace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Options configures Open; nil means defaults.
type Options struct {
	Getenv         func(string) string // default os.Getenv
	ServiceVersion string
	// Synchronous exports every span as it ends (tests); default: batched.
	Synchronous bool
}

// Tracer makes spans; nil is the "tracing off" tracer.
type Tracer struct {
	tp *sdktrace.TracerProvider
	t  oteltrace.Tracer
}

// Enabled reports whether the environment asks for tracing.
func Enabled(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Open returns a Tracer exporting over OTLP/HTTP, configured by the
// standard OTEL_EXPORTER_OTLP_* variables, or nil when they name no
// endpoint.
func Open(o *Options) (*Tracer, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if !Enabled(opts.Getenv) {
		return nil, nil
	}
	var eo []otlptracehttp.Option
	// The exporter reads the process environment itself; a Getenv that
	// is not the process's (tests) is honoured for the endpoint.
	if ep := opts.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); ep != "" {
		eo = append(eo, otlptracehttp.WithEndpointURL(ep))
	} else if ep := opts.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); ep != "" {
		eo = append(eo, otlptracehttp.WithEndpointURL(strings.TrimSuffix(ep, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(context.Background(), eo...)
	if err != nil {
		return nil, fmt.Errorf("trace: OTLP exporter: %w", err)
	}
	name := opts.Getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "sluice"
	}
	res := resource.NewSchemaless(semconv.ServiceName(name), semconv.ServiceVersion(opts.ServiceVersion))
	var sp sdktrace.SpanProcessor
	if opts.Synchronous {
		sp = sdktrace.NewSimpleSpanProcessor(exp)
	} else {
		sp = sdktrace.NewBatchSpanProcessor(exp)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithResource(res))
	return &Tracer{tp: tp, t: tp.Tracer("sluice")}, nil
}

// Shutdown exports what is pending and stops; bounded by ctx.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Attr is one span attribute: a string, bool, int or int64 value.
type Attr struct {
	Key   string
	Value any
}

// MaxText bounds a span's name and each string attribute, in bytes. They
// carry what an agent or a server sent (a capability name, a request id):
// a span holds them until exported, and the batch queue holds thousands
// of spans.
const MaxText = 256

// bound cuts s to MaxText bytes at a UTF-8 boundary, marking the cut.
func bound(s string) string {
	if len(s) <= MaxText {
		return s
	}
	const mark = "…"
	n := MaxText - len(mark)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + mark
}

func (a Attr) otel() attribute.KeyValue {
	switch v := a.Value.(type) {
	case string:
		return attribute.String(a.Key, bound(v))
	case bool:
		return attribute.Bool(a.Key, v)
	case int:
		return attribute.Int(a.Key, v)
	case int64:
		return attribute.Int64(a.Key, v)
	}
	return attribute.String(a.Key, bound(fmt.Sprint(a.Value)))
}

// Kinds of span.
const (
	KindInternal = iota
	KindServer   // an agent's request
	KindClient   // a request sluice sends upstream
)

// Span is one operation; nil when tracing is off.
type Span struct{ s oteltrace.Span }

// Start starts a span named name under the span in ctx (or under the
// remote parent Extract put there).
func (t *Tracer) Start(ctx context.Context, name string, kind int, attrs ...Attr) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	k := oteltrace.SpanKindInternal
	switch kind {
	case KindServer:
		k = oteltrace.SpanKindServer
	case KindClient:
		k = oteltrace.SpanKindClient
	}
	kv := make([]attribute.KeyValue, len(attrs))
	for i, a := range attrs {
		kv[i] = a.otel()
	}
	ctx, s := t.t.Start(ctx, bound(name), oteltrace.WithSpanKind(k), oteltrace.WithAttributes(kv...))
	return ctx, &Span{s: s}
}

// Set adds attributes.
func (s *Span) Set(attrs ...Attr) {
	if s == nil {
		return
	}
	for _, a := range attrs {
		s.s.SetAttributes(a.otel())
	}
}

// End ends the span; a non-nil err marks it failed with its kind (its
// ErrorKind, else its Go type) as both the status description and
// error.type. The error's text is never recorded: it can be an upstream
// server's message, which may carry a secret that the redaction filters
// keep from the agent, and can be megabytes long.
func (s *Span) End(err error) {
	if s == nil {
		return
	}
	if err != nil {
		s.s.SetStatus(codes.Error, errType(err))
		s.s.SetAttributes(attribute.String("error.type", errType(err)))
	}
	s.s.End(oteltrace.WithTimestamp(time.Now()))
}

func errType(err error) string {
	var k interface{ ErrorKind() string }
	if errors.As(err, &k) {
		return k.ErrorKind()
	}
	return fmt.Sprintf("%T", err)
}

var w3c = propagation.TraceContext{}

type carrier map[string]string

func (c carrier) Get(k string) string { return c[k] }
func (c carrier) Set(k, v string)     { c[k] = v }
func (c carrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// Extract returns ctx with the remote parent a W3C traceparent (and
// tracestate) names; an invalid traceparent is ignored.
func Extract(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, carrier{"traceparent": traceparent, "tracestate": tracestate})
}

// Inject returns the W3C traceparent and tracestate of the span in ctx
// ("" when there is none), for an upstream request's _meta.
func Inject(ctx context.Context) (traceparent, tracestate string) {
	if !oteltrace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	c := carrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}
