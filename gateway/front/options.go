package front

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// Mode selects the tool surface front exposes.
type Mode string

const (
	// ModeGateway (the default) exposes a small fixed surface: find,
	// describe, call, plus read_result and execute when available.
	ModeGateway Mode = "gateway"
	// ModeFlat exposes every trusted capability as its own tool and passes
	// upstream resources, prompts, completions and logging through.
	ModeFlat Mode = "flat"
	// ModeAuto serves flat while the listed tool definitions total at
	// most Options.AutoFlatBytes and gateway mode above, re-deciding on
	// every tool-list change (see "Why auto mode switches with a margin"
	// in doc.go).
	ModeAuto Mode = "auto"
)

// DefaultAutoFlatBytes is ModeAuto's default budget for flat tool
// definitions: about 85 tools of a typical size, where the gateway tools
// begin to cost an agent less than direct tools.
const DefaultAutoFlatBytes = 16 << 10

// autoLowWater is the share of AutoFlatBytes (in percent) the definitions
// must fall to before ModeAuto goes back from gateway to flat.
const autoLowWater = 75

// Options configures front. The zero value of every field means the
// documented default; a nil *Options is the all-defaults configuration.
type Options struct {
	Mode Mode // "" = ModeGateway
	// AutoFlatBytes is ModeAuto's budget: flat while the trusted tool
	// definitions total at most this many bytes; 0 = DefaultAutoFlatBytes.
	AutoFlatBytes int
	// MaxToolListingBytes caps one upstream tool's definition in a
	// tools/list answer (flat mode's tools, gateway mode's exposed ones),
	// and likewise one resource, resource template or prompt in its list;
	// 0 = DefaultMaxToolListingBytes, at least MinToolListingBytes. A
	// longer definition is shortened (title, description, then the
	// fields the model needs least; see listcap.go), stays callable, and
	// its description says how to see it whole.
	MaxToolListingBytes int
	// MaxListingBytes caps the upstream tool definitions of one tools/list
	// answer together (and the entries of one resources, templates or
	// prompts list); 0 = DefaultMaxListingBytes. Over it the largest
	// definitions are shortened to one common size (never below
	// MinToolListingBytes, so very many tools can still exceed it).
	MaxListingBytes int
	// OnMode, when set, is told the surface served (ModeFlat or
	// ModeGateway) when serving starts and whenever ModeAuto switches.
	// It must not block.
	OnMode func(Mode)
	// noFastPath sends every tools/call through the SDK (tests compare
	// the two paths).
	noFastPath bool
	// fastTaken, when set, counts the calls the fast path took.
	fastTaken *atomic.Int64
	// postsDropped, when set, counts the SDK-bound POSTs whose agent left
	// before the SDK served them (httpdup.go).
	postsDropped *atomic.Int64
	// NoPrefix (flat mode) keeps an upstream name when no other server uses
	// it; colliding names keep their "<server>__" prefix.
	NoPrefix bool

	Name    string // serverInfo.name; default "sluice"
	Version string // serverInfo.version; default "dev"
	// Instructions replaces the built-in instruction text (the backend's
	// summary is still appended).
	Instructions string
	// MaxInstructionsBytes bounds the backend's instruction summary;
	// default 4096.
	MaxInstructionsBytes int

	// Logger receives JSON logs (one request id per call). Default: a JSON
	// handler on os.Stderr at Info. Never stdout.
	Logger *slog.Logger
	// Metrics is where front records calls and sessions. Default: a new
	// registry (see NewMetrics); pass your own to share it with the gateway.
	Metrics *Metrics

	// ClientRequestTimeout bounds every request front sends to the agent
	// (elicitation, sampling, roots); default 2m.
	ClientRequestTimeout time.Duration
	// RefreshTimeout bounds each flat-mode catalog refresh; default 30s.
	RefreshTimeout time.Duration
	// MaxLineBytes bounds one inbound stdio frame; default 16 MiB.
	MaxLineBytes int

	// HTTP only.
	// AllowRemote permits a non-loopback listen address. Without it
	// ServeHTTP refuses one with a *BindError.
	AllowRemote bool
	// AllowedHosts are extra Host header values (host or host:port)
	// accepted besides loopback names. With AllowRemote and no
	// AllowedHosts, any Host is accepted.
	AllowedHosts []string
	// AllowedOrigins are extra Origin values (scheme://host[:port])
	// accepted besides loopback origins. Requests without Origin pass.
	AllowedOrigins []string
	// Token, when set, is required as "Authorization: Bearer <Token>" on
	// every path except /healthz. Compared in constant time.
	Token string
	// Admin, when set, serves /admin and everything under /admin/ on the
	// same listener, after the Host and Origin checks but before the
	// token check: it does its own authentication (a login form, then a
	// cookie) and its own loopback gate. Its bodies are its own to bound.
	Admin http.Handler
	// MaxRequestBytes caps one HTTP request body; default 4 MiB.
	MaxRequestBytes int64
	// SessionTimeout closes an idle legacy HTTP session; default 30m,
	// negative = never.
	SessionTimeout time.Duration
	// ShutdownTimeout bounds the graceful drain on shutdown; default 10s.
	ShutdownTimeout time.Duration
	// HTTPLimits bounds what one client can hold on the HTTP front.
	HTTPLimits
	// MaxMetricLabels caps distinct capability (and server, filter)
	// label values; the rest are counted as "other". Default 200.
	MaxMetricLabels int
	// NoSignals stops ServeHTTP and ServeStdio from treating SIGTERM and
	// SIGINT as a shutdown request (the caller handles signals itself).
	NoSignals bool
}

// HTTPLimits bound the HTTP front against slow and greedy clients. Zero
// values mean the documented defaults.
type HTTPLimits struct {
	// ReadTimeout bounds reading one whole request, headers and body
	// (headers alone: 10s); default 30s. A request not read in time is
	// answered 408 and its connection closed.
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request in
	// flight; default 2m.
	IdleTimeout time.Duration
	// MaxConnsPerClient caps open connections per remote IP address;
	// default 64. A connection over the cap is answered 503 and closed.
	MaxConnsPerClient int
	// MaxSessions caps legacy (initialize) sessions; default 256. A new
	// session over the cap evicts the session idle the longest (no POST
	// in flight), or is refused with 503 when none is idle.
	MaxSessions int
}

const (
	defaultReadTimeout       = 30 * time.Second
	defaultIdleTimeout       = 2 * time.Minute
	defaultMaxConnsPerClient = 64
	defaultMaxSessions       = 256
	// readHeaderTimeout bounds reading a request's headers.
	readHeaderTimeout = 10 * time.Second
)

const (
	defaultName                 = "sluice"
	defaultVersion              = "dev"
	defaultMaxInstructionsBytes = 4096
	defaultClientRequestTimeout = 2 * time.Minute
	defaultRefreshTimeout       = 30 * time.Second
	defaultMaxLineBytes         = 16 << 20
	defaultMaxRequestBytes      = 4 << 20
	defaultSessionTimeout       = 30 * time.Minute
	defaultShutdownTimeout      = 10 * time.Second
	defaultMaxMetricLabels      = 200
)

// resolved returns a copy with defaults filled in, or an *OptionError.
func (o *Options) resolved() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	switch r.Mode {
	case "":
		r.Mode = ModeGateway
	case ModeGateway, ModeFlat, ModeAuto:
	default:
		return r, &OptionError{Field: "Mode", Value: fmt.Sprintf("%q", r.Mode), Want: `"gateway", "flat" or "auto"`}
	}
	if r.AutoFlatBytes == 0 {
		r.AutoFlatBytes = DefaultAutoFlatBytes
	}
	if r.MaxToolListingBytes == 0 {
		r.MaxToolListingBytes = DefaultMaxToolListingBytes
	}
	if r.MaxListingBytes == 0 {
		r.MaxListingBytes = DefaultMaxListingBytes
	}
	if r.Name == "" {
		r.Name = defaultName
	}
	if r.Version == "" {
		r.Version = defaultVersion
	}
	if r.MaxInstructionsBytes == 0 {
		r.MaxInstructionsBytes = defaultMaxInstructionsBytes
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if r.ClientRequestTimeout == 0 {
		r.ClientRequestTimeout = defaultClientRequestTimeout
	}
	if r.RefreshTimeout == 0 {
		r.RefreshTimeout = defaultRefreshTimeout
	}
	if r.MaxLineBytes == 0 {
		r.MaxLineBytes = defaultMaxLineBytes
	}
	if r.MaxRequestBytes == 0 {
		r.MaxRequestBytes = defaultMaxRequestBytes
	}
	if r.SessionTimeout == 0 {
		r.SessionTimeout = defaultSessionTimeout
	}
	if r.ShutdownTimeout == 0 {
		r.ShutdownTimeout = defaultShutdownTimeout
	}
	if r.MaxMetricLabels == 0 {
		r.MaxMetricLabels = defaultMaxMetricLabels
	}
	if r.ReadTimeout == 0 {
		r.ReadTimeout = defaultReadTimeout
	}
	if r.IdleTimeout == 0 {
		r.IdleTimeout = defaultIdleTimeout
	}
	if r.MaxConnsPerClient == 0 {
		r.MaxConnsPerClient = defaultMaxConnsPerClient
	}
	if r.MaxSessions == 0 {
		r.MaxSessions = defaultMaxSessions
	}
	for _, c := range []struct {
		field string
		bad   bool
		value any
		want  string
	}{
		{"MaxInstructionsBytes", r.MaxInstructionsBytes < 0, r.MaxInstructionsBytes, ">= 0"},
		{"AutoFlatBytes", r.AutoFlatBytes < 0, r.AutoFlatBytes, ">= 0"},
		{"MaxToolListingBytes", r.MaxToolListingBytes < MinToolListingBytes, r.MaxToolListingBytes, fmt.Sprintf(">= %d", MinToolListingBytes)},
		{"MaxListingBytes", r.MaxListingBytes < r.MaxToolListingBytes, r.MaxListingBytes, fmt.Sprintf(">= MaxToolListingBytes (%d)", r.MaxToolListingBytes)},
		{"ClientRequestTimeout", r.ClientRequestTimeout < 0, r.ClientRequestTimeout, "> 0"},
		{"RefreshTimeout", r.RefreshTimeout < 0, r.RefreshTimeout, "> 0"},
		{"MaxLineBytes", r.MaxLineBytes < 4096, r.MaxLineBytes, ">= 4096"},
		{"MaxRequestBytes", r.MaxRequestBytes < 4096, r.MaxRequestBytes, ">= 4096"},
		{"ShutdownTimeout", r.ShutdownTimeout < 0, r.ShutdownTimeout, "> 0"},
		{"MaxMetricLabels", r.MaxMetricLabels < 1, r.MaxMetricLabels, ">= 1"},
		{"ReadTimeout", r.ReadTimeout < 0, r.ReadTimeout, "> 0"},
		{"IdleTimeout", r.IdleTimeout < 0, r.IdleTimeout, "> 0"},
		{"MaxConnsPerClient", r.MaxConnsPerClient < 1, r.MaxConnsPerClient, ">= 1"},
		{"MaxSessions", r.MaxSessions < 1, r.MaxSessions, ">= 1"},
	} {
		if c.bad {
			return r, &OptionError{Field: c.field, Value: fmt.Sprint(c.value), Want: c.want}
		}
	}
	if r.Metrics == nil {
		r.Metrics = NewMetrics(&MetricsOptions{MaxLabels: r.MaxMetricLabels})
	}
	return r, nil
}
