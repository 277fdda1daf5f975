package front

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 server may not send requests in the middle of a call; it
// asks for input by answering input_required and letting the client retry.
// The bridge lets a backend call that is already running ask the agent
// anyway: the call runs as a job detached from the request; when it calls
// Peer.Elicit, the request is answered with input_required and a
// requestState naming the job, and the job waits (bounded by
// ClientRequestTimeout) for the retry, which delivers the answer and
// attaches to the job until it finishes or asks again.

const (
	bridgeStatePrefix = "sluice-input-"
	bridgeInputKey    = "sluice_elicitation"
)

// job is one backend call running under the bridge.
type job struct {
	tool    string
	events  chan jobEvent          // from the call: a question or the end
	answers chan *mcp.ElicitResult // to the call: the agent's answer
	cancel  context.CancelFunc
	peer    *peer
	done    chan struct{} // closed when the call has ended
}

type jobEvent struct {
	ask *mcp.ElicitParams // the call needs an answer
	res *mcp.CallToolResult
	err error
}

// parked holds jobs waiting for the agent's retry.
type parked struct {
	mu   sync.Mutex
	jobs map[string]parkedJob
}

type parkedJob struct {
	j     *job
	timer *time.Timer
}

// useBridge reports whether a call should run as a job: a modern request
// from a client that declared elicitation.
func useBridge(p *peer) bool { return p.modern() && p.Supports("elicitation") }

func (f *front) park(j *job) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := bridgeStatePrefix + hex.EncodeToString(b[:])
	f.parked.mu.Lock()
	defer f.parked.mu.Unlock()
	if f.parked.jobs == nil {
		f.parked.jobs = map[string]parkedJob{}
	}
	f.parked.jobs[token] = parkedJob{j: j, timer: time.AfterFunc(f.opts.ClientRequestTimeout, func() {
		if f.unpark(token) != nil {
			j.cancel() // the agent never came back
		}
	})}
	return token
}

func (f *front) unpark(token string) *job {
	f.parked.mu.Lock()
	defer f.parked.mu.Unlock()
	pj, ok := f.parked.jobs[token]
	if !ok {
		return nil
	}
	pj.timer.Stop()
	delete(f.parked.jobs, token)
	return pj.j
}

// startJob runs fn detached from ctx (the request), so that it can outlive
// an input_required answer, and attaches the request to it.
func (f *front) startJob(ctx context.Context, req *mcp.CallToolRequest, p *peer, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	jctx, cancel := context.WithCancel(f.hard)
	j := &job{tool: req.Params.Name, events: make(chan jobEvent), answers: make(chan *mcp.ElicitResult, 1), cancel: cancel, peer: p, done: make(chan struct{})}
	p.job = j
	if !f.inflight.add() {
		cancel()
		return nil, errShuttingDown
	}
	go func() {
		defer f.inflight.done()
		defer close(j.done)
		defer cancel()
		res, err := run(jctx)
		select {
		case j.events <- jobEvent{res: res, err: err}:
		case <-jctx.Done(): // cancelled, and nobody may be attached
		}
	}()
	return f.attach(ctx, j)
}

// resumeJob delivers a retry's answer to a parked job and attaches to it.
// ok is false when req is not a bridge retry.
func (f *front) resumeJob(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error, ok bool) {
	token := req.Params.RequestState
	if !strings.HasPrefix(token, bridgeStatePrefix) {
		return nil, nil, false
	}
	j := f.unpark(token)
	if j != nil && j.tool != req.Params.Name {
		j.cancel() // a retry must name the same tool; drop the job
		j = nil
	}
	if j == nil {
		return errorResult("This answer came too late or for another call: the question expired. Call the tool again."), nil, true
	}
	ans, _ := req.Params.InputResponses[bridgeInputKey].(*mcp.ElicitResult)
	if ans == nil {
		ans = &mcp.ElicitResult{Action: "cancel"}
	}
	j.peer.attachRequest(ctx, req)
	j.answers <- ans
	res, err = f.attach(ctx, j)
	return res, err, true
}

// attach waits for the job's next event on behalf of one request.
func (f *front) attach(ctx context.Context, j *job) (*mcp.CallToolResult, error) {
	select {
	case ev := <-j.events:
		if ev.ask != nil {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{bridgeInputKey: ev.ask}, RequestState: f.park(j)}, nil
		}
		return ev.res, ev.err
	case <-ctx.Done():
		// The agent went away mid-call: cancel the job; it ends on its own.
		j.cancel()
		return nil, ctx.Err()
	case <-j.done:
		return errorResult("The call was cancelled before it finished (the gateway is shutting down or the question expired). Call the tool again."), nil
	}
}

var errShuttingDown = errors.New("front: shutting down")

// elicitViaBridge is Peer.Elicit for a call running as a job.
func (p *peer) elicitViaBridge(ctx context.Context, params *mcp.ElicitParams) (bool, error) {
	select {
	case p.job.events <- jobEvent{ask: params}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	select {
	case ans := <-p.job.answers:
		return ans.Action == "accept", nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
