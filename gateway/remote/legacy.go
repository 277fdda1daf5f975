package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// sseSession is the legacy HTTP+SSE transport (2024-11-05): one GET event
// stream carries every server message; the first event, "endpoint", names
// the URL each client message is POSTed to.
type sseSession struct {
	c        *Conn
	endpoint *url.URL
}

// dialSSE opens the event stream and waits for the endpoint event, within
// ctx and Options.ConnectTimeout. The stream then lives until Close.
func (c *Conn) dialSSE(ctx context.Context) (*sseSession, error) {
	sctx, cancel := context.WithCancel(c.ctx)
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, c.u.String(), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	if err := c.baseHeaders(req, ctx); err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	timer := time.AfterFunc(c.o.ConnectTimeout, cancel)
	stopWait := context.AfterFunc(ctx, cancel)
	defer func() {
		timer.Stop()
		stopWait()
	}()
	fail := func(err error) (*sseSession, error) {
		timedOut := sctx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("remote: waiting for the SSE endpoint: %w", ctx.Err())
		}
		if timedOut && c.ctx.Err() == nil {
			return nil, fmt.Errorf("remote: no SSE endpoint event within %s", c.o.ConnectTimeout)
		}
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fail(unwrapURLError(err))
	}
	if resp.StatusCode/100 != 2 {
		err := c.httpError(http.MethodGet, resp)
		resp.Body.Close()
		return fail(err)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		drain(resp)
		return fail(fmt.Errorf("%w (the legacy SSE transport needs one)", ErrNotSSE))
	}
	r := newSSEReader(resp.Body, c.o.MaxMessageBytes)
	var endpoint *url.URL
	for endpoint == nil {
		ev, err := r.next()
		if err != nil {
			resp.Body.Close()
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w before the endpoint event", ErrStreamClosed)
			}
			return fail(err)
		}
		if ev.typ != "endpoint" {
			continue
		}
		ep, err := c.u.Parse(strings.TrimSpace(string(ev.data)))
		if err != nil {
			resp.Body.Close()
			return fail(fmt.Errorf("remote: the endpoint event %q is not a URL", sanitize(ev.data)))
		}
		if ep.Scheme != c.u.Scheme || !strings.EqualFold(ep.Host, c.u.Host) || ep.User != nil {
			resp.Body.Close()
			return fail(fmt.Errorf("remote: the endpoint event names another origin (%s); refused", Describe(ep)))
		}
		endpoint = ep
	}
	s := &sseSession{c: c, endpoint: endpoint}
	if !c.goRun(func() {
		defer cancel()
		defer resp.Body.Close()
		s.readLoop(r)
	}) {
		resp.Body.Close()
		cancel()
		return nil, c.closedErr()
	}
	return s, nil
}

func (s *sseSession) readLoop(r *sseReader) {
	c := s.c
	for {
		ev, err := r.next()
		if err != nil {
			if c.ctx.Err() == nil {
				if errors.Is(err, io.EOF) {
					err = ErrStreamClosed
				}
				c.log.Warn("legacy SSE stream ended", "err", err)
				c.fail(fmt.Errorf("%w: %w", ErrStreamClosed, err))
			}
			return
		}
		if len(ev.data) == 0 || (ev.typ != "" && ev.typ != "message") {
			continue
		}
		c.emit(ev.data)
	}
}

// send POSTs one message to the endpoint. A request that cannot be
// delivered gets a transport-written error response.
func (s *sseSession) send(ctx context.Context, msg []byte, env envelope) error {
	c := s.c
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	unhook := context.AfterFunc(c.ctx, stop)
	defer unhook()
	err := s.post(ctx, msg, env)
	if err == nil {
		return nil
	}
	if env.isRequest() && c.ctx.Err() == nil {
		p := &pendingReq{env: env, ctx: c.ctx}
		c.reply(p, err)
		return nil
	}
	return err
}

func (s *sseSession) post(ctx context.Context, msg []byte, env envelope) error {
	c := s.c
	resp, err := c.post(ctx, s.endpoint, msg, env, nil, false)
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode/100 != 2 {
		return c.httpError(http.MethodPost, resp)
	}
	return nil
}

// fallbackToSSE is auto mode's second step: initialize over streamable
// HTTP got 400, 404 or 405, so try the legacy transport at the same URL and
// send initialize there.
func (c *Conn) fallbackToSSE(p *pendingReq, status int) {
	ctx, cancel := context.WithTimeout(p.ctx, c.o.ConnectTimeout)
	defer cancel()
	s, err := c.dialSSE(ctx)
	if err != nil {
		c.reply(p, fmt.Errorf("streamable HTTP answered %d to initialize, and legacy SSE failed too: %w", status, err))
		return
	}
	c.mu.Lock()
	c.mode = modeSSE
	c.legacy = s
	c.mu.Unlock()
	c.log.Info("using the legacy HTTP+SSE transport", "streamableStatus", status)
	if err := s.post(ctx, p.body, p.env); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("sending initialize over legacy SSE: %w", err)
		}
		c.reply(p, err)
	}
}
