package gateway

import (
	"context"
	"net/http"
	"time"

	"sluice/gateway/config"
	"sluice/gateway/mcp"
	"sluice/gateway/remote"
)

const remoteDiscoverTimeout = 10 * time.Second

// dialRemote connects to a url server and completes the handshake: the
// same client core as a stdio server, over gateway/remote's transport.
// Headers are expanded here, at connect time, and never logged.
func (g *Gateway) dialRemote(ctx context.Context, d config.Server, opts *mcp.Options) (*mcp.Client, error) {
	headers, err := d.ExpandHeaders(g.opts.LookupEnv)
	if err != nil {
		return nil, &Error{Kind: KindGateway, Server: d.ID, Message: err.Error(), Err: err}
	}
	h := make(http.Header, len(headers))
	for k, v := range headers {
		h.Set(k, v)
	}
	ro := &remote.Options{
		Server:    d.ID,
		URL:       d.URL,
		Headers:   h,
		Transport: d.Transport,
		// config refuses allowPrivate outside user scope; this keeps the
		// rule even for a declaration built some other way.
		AllowPrivate: d.AllowPrivate && d.Scope == config.ScopeUser,
		UserAgent:    g.opts.ClientName + "/" + g.opts.ClientVersion,
		Logger:       g.log,
	}
	a, err := g.authorizer(d, h)
	if err != nil {
		return nil, err
	}
	if a != nil {
		ro.Authorizer = a
	}
	scrubMessages, scrubText := remoteScrub(d, headers, a)
	ro.ScrubText = scrubText
	conn, err := remote.Dial(ctx, ro)
	if err != nil {
		return nil, err
	}
	o := *opts
	o.Scrub = scrubMessages
	if o.DiscoverTimeout == 0 {
		// Over HTTP every server answers the probe; a short budget only
		// misreads a slow modern server as legacy.
		o.DiscoverTimeout = remoteDiscoverTimeout
	}
	c := mcp.New(conn, &o)
	if err := c.Handshake(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
