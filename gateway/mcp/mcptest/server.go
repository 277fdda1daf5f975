package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Protocol versions the fixture speaks.
const (
	ModernVersion       = "2026-07-28"
	LatestLegacyVersion = "2025-11-25"
	ServerVersion       = "1.0.0"
)

var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Reserved _meta keys of the 2026-07-28 era.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// JSON-RPC and MCP error codes the fixture sends.
const (
	CodeParseError                 = -32700
	CodeInvalidRequest             = -32600
	CodeMethodNotFound             = -32601
	CodeInvalidParams              = -32602
	CodeUnsupportedProtocolVersion = -32022
)

// Markers the fixture writes, for tests that look for them.
const (
	BannerLine   = "mcpfixture: starting up (this banner is not JSON)"
	NoiseLine    = "mcpfixture: noise between frames"
	InvalidUTF8  = "\xff\xfe\xfd"
	cancelledLog = "mcpfixture: cancelled request "
)

type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

type rpcErr struct {
	code int
	msg  string
	data any
}

type server struct {
	opts *Options
	out  io.Writer
	errw io.Writer

	wmu  sync.Mutex // serializes frames on out
	werr error
	emu  sync.Mutex // serializes lines on errw

	mu            sync.Mutex
	legacy        bool   // initialize was answered: the connection is legacy
	legacyVersion string // negotiated by initialize
	handshook     bool   // initialize or server/discover was answered
	late          bool   // list_changed was called
	inflight      map[string]context.CancelFunc
	pending       map[string]chan envelope
	nextOut       int
	held          [][]byte      // answers Options.Together holds
	release       chan struct{} // closed when the held answers are written
	heldDone      bool          // the held batch went out: answers go as they come

	crashOnce sync.Once
	crashed   chan struct{}
	eof       chan struct{} // closed when stdin ended: no answer can arrive any more
	wg        sync.WaitGroup
}

// Serve runs one fixture server: it reads JSON-RPC lines from in and writes
// frames to out and diagnostics to errw (nil = discarded). It returns nil
// when in reaches EOF (unless ModeIgnoreEOF), ErrStopped when ctx is done,
// ErrCrashed after a requested crash, or the error that ended reading or
// writing. Serve never closes in or out; a goroutine blocked reading in
// may outlive Serve until in is closed (a process simply exits).
func Serve(ctx context.Context, in io.Reader, out io.Writer, errw io.Writer, opts *Options) error {
	if opts == nil {
		opts = &Options{}
	}
	if errw == nil {
		errw = io.Discard
	}
	s := &server{
		opts: opts, out: out, errw: errw,
		inflight: map[string]context.CancelFunc{},
		pending:  map[string]chan envelope{},
		crashed:  make(chan struct{}),
		eof:      make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Has(ModeExitAtStart) {
		s.logf("mcpfixture: fatal: refusing to start (mode exit-at-start)")
		return errors.New("mcptest: exit-at-start")
	}
	if opts.Has(ModeBanner) {
		if err := s.writeLine([]byte(BannerLine)); err != nil {
			return err
		}
	}

	if opts.Has(ModeStderrFlood) {
		go func() {
			line := strings.Repeat("e", 1000)
			for n := 0; ctx.Err() == nil; n++ {
				s.logf("mcpfixture: stderr flood %d %s", n, line)
			}
		}()
	}

	lines := make(chan []byte)
	next := make(chan struct{})
	readDone := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
				select {
				case <-next:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				readDone <- err
				return
			}
		}
	}()

	finish := func(err error) error {
		cancel()
		s.cancelAll()
		s.wg.Wait()
		return err
	}
	var idle <-chan time.Time // ticks only while stdin is left unread (stop-reading)
	for {
		select {
		case <-idle:
		case <-ctx.Done():
			return finish(ErrStopped)
		case <-s.crashed:
			cancel()
			return ErrCrashed
		case err := <-readDone:
			readDone = nil
			close(s.eof)
			if opts.ignoreEOF() {
				s.logf("mcpfixture: stdin closed, staying up (mode ignore-eof)")
				continue
			}
			// Let calls in flight finish (their answers may still be read),
			// then leave.
			done := make(chan struct{})
			go func() { s.wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				return finish(ErrStopped)
			case <-s.crashed:
				cancel()
				return ErrCrashed
			}
			if errors.Is(err, io.EOF) {
				return finish(nil)
			}
			return finish(fmt.Errorf("mcptest: reading stdin: %w", err))
		case line := <-lines:
			stop, err := s.dispatch(ctx, line)
			if err != nil {
				return finish(err)
			}
			if stop {
				s.logf("mcpfixture: handshake done, no longer reading stdin (mode stop-reading)")
				lines = nil
				// Every goroutine now waits on a channel; without a pending
				// timer the runtime would end a process that blocks like this
				// ("all goroutines are asleep") instead of leaving it to be
				// killed, which is what the mode is for. (A channel timer
				// counts only while a goroutine waits on it.)
				keep := time.NewTicker(time.Hour)
				defer keep.Stop()
				idle = keep.C
				continue
			}
			select {
			case next <- struct{}{}:
			case <-ctx.Done():
			}
		}
	}
}

func (s *server) logf(format string, a ...any) {
	s.emu.Lock()
	defer s.emu.Unlock()
	fmt.Fprintf(s.errw, format+"\n", a...)
}

func (s *server) writeLine(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.werr != nil {
		return s.werr
	}
	if s.opts != nil && s.opts.LeakEnv != "" && s.opts.Has(ModeLeaky) {
		q, _ := json.Marshal(os.Getenv(s.opts.LeakEnv))
		b = bytes.ReplaceAll(b, []byte(LeakKey), q[1:len(q)-1])
	}
	buf := make([]byte, 0, len(b)+1)
	buf = append(append(buf, b...), '\n')
	if _, err := s.out.Write(buf); err != nil {
		s.werr = err
		return err
	}
	return nil
}

func (s *server) frame(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("mcptest: encoding frame: %w", err)
	}
	if s.opts.Has(ModeLeaky) {
		b = bytes.ReplaceAll(b, []byte(`"`+escapedContent+`"`), []byte(`"cont\u0065nt"`))
	}
	return s.writeLine(b)
}

func (s *server) notify(method string, params any) error {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	return s.frame(m)
}

func (s *server) replyErr(id json.RawMessage, e *rpcErr) error {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body := map[string]any{"code": e.code, "message": e.msg}
	if e.data != nil {
		body["data"] = e.data
	}
	return s.frame(map[string]any{"jsonrpc": "2.0", "id": id, "error": body})
}

// decorate adds what a 2026-07-28 result carries.
func (s *server) decorate(result map[string]any, modern bool) map[string]any {
	if modern {
		result["resultType"] = "complete"
		result["_meta"] = map[string]any{MetaServerInfo: s.serverInfo()}
	}
	return result
}

func (s *server) serverInfo() map[string]any {
	return map[string]any{"name": s.opts.name(), "version": ServerVersion, "title": "sluice test fixture"}
}

func (s *server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// dispatch handles one line; stop means "read no more" (ModeStopReading).
func (s *server) dispatch(ctx context.Context, line []byte) (stop bool, err error) {
	line = bytes.TrimSpace(line)
	if line[0] == '[' {
		return false, s.replyErr(nil, &rpcErr{code: CodeInvalidRequest, msg: "batches are not supported"})
	}
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		return false, s.replyErr(nil, &rpcErr{code: CodeParseError, msg: "parse error: " + err.Error()})
	}
	hasID := len(env.ID) > 0 && string(env.ID) != "null"
	switch {
	case env.Method == "" && hasID:
		s.route(env)
		return false, nil
	case env.Method == "":
		return false, nil
	case !hasID:
		s.notification(env)
		return false, nil
	}
	return s.request(ctx, env)
}

func (s *server) route(env envelope) {
	s.mu.Lock()
	ch := s.pending[idKey(env.ID)]
	delete(s.pending, idKey(env.ID))
	s.mu.Unlock()
	if ch != nil {
		ch <- env
	}
}

func (s *server) notification(env envelope) {
	switch env.Method {
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(env.Params, &p) != nil || len(p.RequestID) == 0 {
			return
		}
		k := idKey(p.RequestID)
		s.mu.Lock()
		c := s.inflight[k]
		s.mu.Unlock()
		if c != nil {
			s.logf("%s%s", cancelledLog, k)
			c()
		}
	}
}

func (s *server) cancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.inflight {
		c()
	}
}

// parseMeta returns params._meta as a map (nil when absent).
func parseMeta(params json.RawMessage) (map[string]json.RawMessage, error) {
	if len(params) == 0 || string(params) == "null" {
		return nil, nil
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("params must be an object with an object _meta: %v", err)
	}
	return p.Meta, nil
}

// checkModern validates the per-request _meta of the 2026-07-28 era.
func checkModern(meta map[string]json.RawMessage) (string, *rpcErr) {
	rawPV, ok := meta[MetaProtocolVersion]
	if !ok {
		return "", &rpcErr{code: CodeInvalidParams, msg: "missing _meta[\"" + MetaProtocolVersion + "\"]: send it on every request (or use initialize on a legacy connection)"}
	}
	var pv string
	if json.Unmarshal(rawPV, &pv) != nil || pv == "" {
		return "", &rpcErr{code: CodeInvalidParams, msg: "_meta[\"" + MetaProtocolVersion + "\"] must be a non-empty string"}
	}
	if pv != ModernVersion {
		return "", &rpcErr{code: CodeUnsupportedProtocolVersion, msg: "unsupported protocol version " + strconv.Quote(pv),
			data: map[string]any{"supported": []string{ModernVersion}, "requested": pv}}
	}
	caps, ok := meta[MetaClientCapabilities]
	if !ok || len(bytes.TrimSpace(caps)) == 0 || bytes.TrimSpace(caps)[0] != '{' {
		return "", &rpcErr{code: CodeInvalidParams, msg: "missing or non-object _meta[\"" + MetaClientCapabilities + "\"]"}
	}
	if ci, ok := meta[MetaClientInfo]; ok && (len(bytes.TrimSpace(ci)) == 0 || bytes.TrimSpace(ci)[0] != '{') {
		return "", &rpcErr{code: CodeInvalidParams, msg: "_meta[\"" + MetaClientInfo + "\"] must be an object"}
	}
	return pv, nil
}

func (s *server) request(ctx context.Context, env envelope) (bool, error) {
	o := s.opts
	meta, merr := parseMeta(env.Params)
	if merr != nil {
		return false, s.replyErr(env.ID, &rpcErr{code: CodeInvalidParams, msg: merr.Error()})
	}
	switch env.Method {
	case "initialize", "server/discover":
		if o.Has(ModeNoInit) {
			if o.Has(ModeFlood) {
				s.logf("mcpfixture: flooding stdout instead of answering %s (modes no-init,flood)", env.Method)
				return false, s.flood(ctx)
			}
			s.logf("mcpfixture: not answering %s (mode no-init)", env.Method)
			return false, nil
		}
		if d := o.delay(); d > 0 && !s.sleep(ctx, d) {
			return false, nil
		}
		if o.Has(ModeInitRefused) {
			return false, s.replyErr(env.ID, &rpcErr{code: -32000, msg: "refused: the key " + LeakKey + " is not valid", data: map[string]any{"key": LeakKey}})
		}
		var err error
		var ok bool
		if env.Method == "initialize" {
			ok, err = s.initialize(env)
		} else {
			ok, err = s.discover(env, meta)
		}
		return ok && o.Has(ModeStopReading), err
	}

	s.mu.Lock()
	legacy, handshook := s.legacy, s.handshook
	s.mu.Unlock()
	modern := false
	pv := ""
	_, hasPV := meta[MetaProtocolVersion]
	switch {
	case env.Method == "ping" && !hasPV && !o.Has(ModeModernOnly):
		// A legacy ping is allowed before initialize.
	case o.Has(ModeLegacyOnly):
		// Like TS SDK v1 servers: _meta is ignored and requests are served
		// even before initialize.
	case o.Has(ModeModernOnly) || !legacy:
		// No initialize on this connection: every request must carry the
		// per-request _meta of the modern era. After initialize, _meta is
		// ignored (the connection is legacy for its whole life).
		var e *rpcErr
		if pv, e = checkModern(meta); e != nil {
			return false, s.replyErr(env.ID, e)
		}
		modern = true
	}
	if !modern {
		s.mu.Lock()
		pv = s.legacyVersion
		s.mu.Unlock()
	}
	if o.Has(ModeFlood) && handshook && env.Method != "ping" {
		s.logf("mcpfixture: flooding stdout without a newline (mode flood)")
		return false, s.flood(ctx)
	}

	switch env.Method {
	case "ping":
		if modern {
			return false, s.replyErr(env.ID, &rpcErr{code: CodeMethodNotFound, msg: "ping was removed in " + ModernVersion})
		}
		return false, s.reply(ctx, env.ID, map[string]any{}, false)
	case "tools/list":
		res, e := s.list(env.Params, modern)
		if e != nil {
			return false, s.replyErr(env.ID, e)
		}
		return false, s.reply(ctx, env.ID, res, modern)
	case "tools/call":
		return false, s.startCall(ctx, env, meta, modern, pv)
	}
	if s.opts.Has(ModeHugeListings) {
		if res, ok := hugeListing(env.Method); ok {
			return false, s.reply(ctx, env.ID, res, modern)
		}
	}
	if s.opts.Has(ModeLeaky) {
		if res, e, ok := leakyMethod(env.Method, env.Params); ok {
			if e != nil {
				return false, s.replyErr(env.ID, e)
			}
			return false, s.reply(ctx, env.ID, res, modern)
		}
	}
	return false, s.replyErr(env.ID, &rpcErr{code: CodeMethodNotFound, msg: "method not found: " + env.Method})
}

func (s *server) reply(ctx context.Context, id json.RawMessage, result map[string]any, modern bool) error {
	if d := s.opts.delay(); d > 0 && !s.sleep(ctx, d) {
		return nil
	}
	return s.frame(map[string]any{"jsonrpc": "2.0", "id": id, "result": s.decorate(result, modern)})
}

func (s *server) initialize(env envelope) (bool, error) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(env.Params, &p)
	if s.opts.Has(ModeModernOnly) {
		return false, s.replyErr(env.ID, &rpcErr{code: CodeUnsupportedProtocolVersion,
			msg:  "initialize is not supported: this server speaks " + ModernVersion + " only (send per-request _meta)",
			data: map[string]any{"supported": []string{ModernVersion}, "requested": p.ProtocolVersion}})
	}
	if p.ProtocolVersion == "" {
		return false, s.replyErr(env.ID, &rpcErr{code: CodeInvalidParams, msg: "initialize: missing params.protocolVersion"})
	}
	chosen := LatestLegacyVersion
	if slices.Contains(legacyVersions, p.ProtocolVersion) {
		chosen = p.ProtocolVersion
	}
	s.mu.Lock()
	s.legacy, s.legacyVersion, s.handshook = true, chosen, true
	s.mu.Unlock()
	res := map[string]any{
		"protocolVersion": chosen,
		"capabilities":    s.capabilities(),
		"serverInfo":      s.serverInfo(),
		"instructions":    s.instructions(),
	}
	return true, s.frame(map[string]any{"jsonrpc": "2.0", "id": env.ID, "result": res})
}

func (s *server) discover(env envelope, meta map[string]json.RawMessage) (bool, error) {
	if s.opts.Has(ModeLegacyOnly) {
		return false, s.replyErr(env.ID, &rpcErr{code: CodeMethodNotFound, msg: "Method not found"})
	}
	if _, e := checkModern(meta); e != nil {
		return false, s.replyErr(env.ID, e)
	}
	versions := []string{ModernVersion}
	if !s.opts.Has(ModeModernOnly) {
		versions = append(versions, legacyVersions...)
	}
	s.mu.Lock()
	s.handshook = true
	s.mu.Unlock()
	res := s.decorate(map[string]any{
		"supportedVersions": versions,
		"capabilities":      s.capabilities(),
		"instructions":      s.instructions(),
		"ttlMs":             60000,
		"cacheScope":        "public",
	}, true)
	return true, s.frame(map[string]any{"jsonrpc": "2.0", "id": env.ID, "result": res})
}

// instructions is the handshake's instructions text; ModeLeaky puts the
// key in it.
func (s *server) instructions() string {
	const text = "Test fixture for sluice. Call echo, add, slow, huge and friends."
	if s.opts.InstructionsFile != "" {
		if b, err := os.ReadFile(s.opts.InstructionsFile); err == nil {
			return string(b)
		}
	}
	if s.opts.Has(ModeLeaky) {
		return text + " Its keys look like " + LeakKey + "."
	}
	return text
}

func (s *server) tools() []toolDef {
	defs := builtinDefs()
	s.mu.Lock()
	late := s.late
	s.mu.Unlock()
	if late {
		defs = append(defs, lateTool())
	}
	for i := 1; i <= s.opts.Tools; i++ {
		defs = append(defs, generatedTool(i))
	}
	if s.opts.Has(ModeLeaky) {
		defs = append(defs, leakyDefs()...)
	}
	if s.opts != nil {
		extra, err := readToolsFile(s.opts.ToolsFile)
		if err != nil {
			s.logf("mcpfixture: -tools-file: %v", err)
		}
		defs = append(defs, extra...)
	}
	return defs
}

// readToolsFile reads the extra tool definitions of Options.ToolsFile
// ("" = none).
func readToolsFile(path string) ([]toolDef, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var defs []toolDef
	if err := json.Unmarshal(data, &defs); err != nil {
		return nil, err
	}
	out := defs[:0]
	for _, d := range defs {
		if d.Name != "" {
			out = append(out, d)
		}
	}
	return out, nil
}

func encodeCursor(off int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(off)))
}

func decodeCursor(c string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	n, ok := strings.CutPrefix(string(b), "offset:")
	if !ok {
		return 0, false
	}
	off, err := strconv.Atoi(n)
	return off, err == nil && off >= 0
}

func (s *server) list(params json.RawMessage, modern bool) (map[string]any, *rpcErr) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if len(params) > 0 && json.Unmarshal(params, &p) != nil {
		return nil, &rpcErr{code: CodeInvalidParams, msg: "tools/list: params must be an object"}
	}
	defs := s.tools()
	off := 0
	if p.Cursor != nil {
		var ok bool
		off, ok = decodeCursor(*p.Cursor)
		if !ok || off > len(defs) {
			return nil, &rpcErr{code: CodeInvalidParams, msg: "tools/list: invalid cursor " + strconv.Quote(*p.Cursor)}
		}
	}
	end := len(defs)
	if ps := s.opts.pageSize(); ps > 0 && off+ps < end {
		end = off + ps
	}
	res := map[string]any{"tools": defs[off:end]}
	switch {
	case s.opts.Has(ModeCursorLoop):
		res["nextCursor"] = encodeCursor(0)
	case end < len(defs):
		res["nextCursor"] = encodeCursor(end)
	}
	if modern {
		res["ttlMs"] = 60000
		res["cacheScope"] = "public"
	}
	return res, nil
}

func (s *server) flood(ctx context.Context) error {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for ctx.Err() == nil {
		if _, err := s.out.Write(chunk); err != nil {
			s.werr = err
			return err
		}
	}
	return ErrStopped
}

// crash writes a torn frame and makes Serve return ErrCrashed.
func (s *server) crash(id json.RawMessage) {
	s.crashOnce.Do(func() {
		s.logf("mcpfixture: crashing on purpose in the middle of request %s", idKey(id))
		s.wmu.Lock()
		if s.werr == nil {
			_, _ = s.out.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"cra`))
			s.werr = ErrCrashed
		}
		s.wmu.Unlock()
		close(s.crashed)
	})
}

type call struct {
	id     json.RawMessage
	name   string
	args   map[string]any
	meta   map[string]json.RawMessage
	modern bool
	pv     string
}

func (s *server) startCall(ctx context.Context, env envelope, meta map[string]json.RawMessage, modern bool, pv string) error {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(env.Params, &p); err != nil || p.Name == "" {
		return s.replyErr(env.ID, &rpcErr{code: CodeInvalidParams, msg: "tools/call: params.name is required"})
	}
	known := false
	for _, d := range s.tools() {
		if d.Name == p.Name {
			known = true
			break
		}
	}
	if !known {
		return s.replyErr(env.ID, &rpcErr{code: CodeInvalidParams, msg: "unknown tool " + strconv.Quote(p.Name)})
	}
	args, err := decodeArgs(p.Arguments)
	if err != nil {
		return s.replyErr(env.ID, &rpcErr{code: CodeInvalidParams, msg: "tools/call: " + err.Error()})
	}
	c := call{id: env.ID, name: p.Name, args: args, meta: meta, modern: modern, pv: pv}
	cctx, cancel := context.WithCancel(ctx)
	k := idKey(env.ID)
	s.mu.Lock()
	s.inflight[k] = cancel
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.inflight, k)
			s.mu.Unlock()
			cancel()
		}()
		s.runCall(cctx, c)
	}()
	return nil
}

func (s *server) runCall(ctx context.Context, c call) {
	o := s.opts
	if o.Has(ModeCrash) {
		s.crash(c.id)
		return
	}
	res, e := s.tool(ctx, c)
	if ctx.Err() != nil {
		s.logf("mcpfixture: request %s ended by cancellation; not answering", idKey(c.id))
		return
	}
	if e != nil {
		_ = s.replyErr(c.id, e)
		return
	}
	if res == nil { // crashed
		return
	}
	if o.Has(ModeHuge) {
		if content, ok := res["content"].([]any); ok {
			res["content"] = append(content, textBlock(strings.Repeat("h", o.hugePad())))
		}
	}
	const marker = "@@mcpfixture-invalid-utf8@@"
	if o.Has(ModeInvalidUTF8) {
		if content, ok := res["content"].([]any); ok {
			res["content"] = append(content, textBlock("bad bytes: "+marker))
		}
	}
	if d := o.delay(); d > 0 && !s.sleep(ctx, d) {
		return
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "result": s.decorate(res, c.modern)})
	if err != nil {
		s.logf("mcpfixture: encoding result: %v", err)
		return
	}
	if o.Has(ModeInvalidUTF8) {
		b = bytes.Replace(b, []byte(marker), []byte(InvalidUTF8), 1)
	}
	if o.Has(ModeBanner) {
		if s.writeLine([]byte(NoiseLine)) != nil {
			return
		}
	}
	s.answer(ctx, b)
}

// answer writes one tools/call answer, or holds it while Options.Together
// says so: the answer that completes the batch writes all of it.
func (s *server) answer(ctx context.Context, b []byte) {
	s.mu.Lock()
	if s.opts.Together <= 1 || s.heldDone {
		s.mu.Unlock()
		_ = s.writeLine(b)
		return
	}
	s.held = append(s.held, b)
	if s.release == nil {
		s.release = make(chan struct{})
	}
	release := s.release
	if len(s.held) < s.opts.Together {
		s.mu.Unlock()
		select { // written by the batch's last answer
		case <-release:
		case <-ctx.Done():
		}
		return
	}
	batch := s.held
	s.held, s.heldDone = nil, true
	s.mu.Unlock()
	s.wmu.Lock()
	for _, line := range batch {
		if s.werr != nil {
			break
		}
		if _, err := s.out.Write(append(line, '\n')); err != nil {
			s.werr = err
		}
	}
	s.wmu.Unlock()
	close(release)
}

// tool runs one builtin; a nil result with a nil error means "crashed".
func (s *server) tool(ctx context.Context, c call) (map[string]any, *rpcErr) {
	switch c.name {
	case "echo":
		text, ok := argString(c.args, "text")
		if !ok {
			return toolError("echo: argument \"text\" (string) is required"), nil
		}
		return textResult(text), nil
	case "add":
		a, aok := c.args["a"].(json.Number)
		b, bok := c.args["b"].(json.Number)
		if !aok || !bok {
			return toolError("add: arguments \"a\" and \"b\" must be numbers"), nil
		}
		sum, err := exactSum(a, b)
		if err != nil {
			return toolError("add: %v", err), nil
		}
		return map[string]any{
			"content":           []any{textBlock(sum)},
			"structuredContent": map[string]any{"sum": json.RawMessage(sum)},
		}, nil
	case "slow":
		return s.slow(ctx, c), nil
	case "huge":
		n, err := argInt(c.args, "bytes", s.opts.hugeTool())
		if err != nil {
			return toolError("huge: %v", err), nil
		}
		return textResult(strings.Repeat("a", n)), nil
	case "structured":
		return map[string]any{
			"content":           []any{},
			"structuredContent": map[string]any{"city": "Oslo", "temperature": json.RawMessage("-3.5"), "ok": true},
		}, nil
	case "meta":
		era := "legacy"
		if c.modern {
			era = "modern"
		}
		m := any(nil)
		if c.meta != nil {
			m = c.meta
		}
		sc := map[string]any{"era": era, "protocolVersion": c.pv, "meta": m}
		b, _ := json.Marshal(sc)
		return map[string]any{"content": []any{textBlock(string(b))}, "structuredContent": sc}, nil
	case "bad_iserror":
		r := textResult("isError is a string here, which the protocol forbids")
		r["isError"] = "true"
		return r, nil
	case "fail":
		return toolError("the fixture failed on purpose"), nil
	case "list_changed":
		s.mu.Lock()
		s.late = true
		s.mu.Unlock()
		if err := s.notify("notifications/tools/list_changed", nil); err != nil {
			return toolError("list_changed: %v", err), nil
		}
		return textResult("late_tool added; notifications/tools/list_changed sent"), nil
	case "ask_roots":
		return s.askRoots(ctx, c), nil
	case "stderr":
		text, _ := argString(c.args, "text")
		s.logf("%s", text)
		return textResult(fmt.Sprintf("wrote %d bytes to stderr", len(text)+1)), nil
	case "crash":
		s.crash(c.id)
		return nil, nil
	case "grandchild":
		if s.opts.Spawn == nil {
			return toolError("grandchild: this fixture cannot spawn processes (no Spawn hook)"), nil
		}
		pid, err := s.opts.Spawn()
		if err != nil {
			return toolError("grandchild: %v", err), nil
		}
		return map[string]any{
			"content":           []any{textBlock(fmt.Sprintf("spawned grandchild pid %d", pid))},
			"structuredContent": map[string]any{"pid": pid},
		}, nil
	case "late_tool":
		return textResult("late_tool called"), nil
	}
	if s.opts.Has(ModeLeaky) {
		switch c.name {
		case "leak_sampling":
			return s.askClient(ctx, c, "sampling/createMessage", map[string]any{"maxTokens": 5,
				"systemPrompt": "system " + LeakKey,
				"messages":     []any{map[string]any{"role": "user", "content": textBlock("sample " + LeakKey)}}}), nil
		case "leak_elicit":
			return s.askClient(ctx, c, "elicitation/create", map[string]any{"message": "confirm " + LeakKey,
				"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean", "description": "d " + LeakKey}}}}), nil
		}
		if res, e, ok := s.leakyTool(c); ok {
			return res, e
		}
	}
	if s.opts != nil {
		extra, _ := readToolsFile(s.opts.ToolsFile)
		for _, d := range extra {
			if d.Name == c.name {
				return textResult(c.name + " called"), nil
			}
		}
	}
	if strings.HasPrefix(c.name, "tool_") {
		x, _ := argString(c.args, "x")
		return textResult(c.name + " called with x=" + strconv.Quote(x)), nil
	}
	return nil, &rpcErr{code: CodeInvalidParams, msg: "unknown tool " + strconv.Quote(c.name)}
}

func (s *server) slow(ctx context.Context, c call) map[string]any {
	ms, err := argInt(c.args, "ms", 1000)
	if err != nil {
		return toolError("slow: %v", err)
	}
	steps, err := argInt(c.args, "steps", max(1, min(ms/100, 100)))
	if err != nil {
		return toolError("slow: %v", err)
	}
	steps = max(1, min(steps, 1000))
	token, hasToken := c.meta["progressToken"]
	per := time.Duration(ms) * time.Millisecond / time.Duration(steps)
	for i := 1; i <= steps; i++ {
		if !s.sleep(ctx, per) {
			return nil
		}
		if hasToken {
			_ = s.notify("notifications/progress", map[string]any{
				"progressToken": token, "progress": i, "total": steps,
				"message": fmt.Sprintf("step %d of %d", i, steps),
			})
		}
	}
	return textResult(fmt.Sprintf("slept %d ms in %d steps", ms, steps))
}

func (s *server) askRoots(ctx context.Context, c call) map[string]any {
	return s.askClient(ctx, c, "roots/list", nil)
}

// askClient sends method (with params, when not nil) to the client and
// returns its answer as the tool's result (legacy era only).
func (s *server) askClient(ctx context.Context, c call, method string, params any) map[string]any {
	if c.modern {
		return toolError("%s: server-to-client requests do not exist in the %s era", c.name, ModernVersion)
	}
	ms, err := argInt(c.args, "ms", 0)
	if err != nil {
		return toolError("%s: %v", c.name, err)
	}
	if ms > 0 {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Duration(ms) * time.Millisecond):
		}
	}
	s.mu.Lock()
	s.nextOut++
	id := json.RawMessage(strconv.Quote("fixture-" + strconv.Itoa(s.nextOut)))
	ch := make(chan envelope, 1)
	s.pending[idKey(id)] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, idKey(id))
		s.mu.Unlock()
	}()
	req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	if err := s.frame(req); err != nil {
		return toolError("%s: %v", c.name, err)
	}
	select {
	case <-ctx.Done():
		return nil
	case <-s.eof:
		return toolError("%s: stdin closed before the client answered %s", c.name, method)
	case env := <-ch:
		if len(env.Error) > 0 {
			return toolError("%s: the client answered %s with an error: %s", c.name, method, env.Error)
		}
		r := textResult(string(env.Result))
		if len(env.Result) > 0 && env.Result[0] == '{' {
			r["structuredContent"] = env.Result
		}
		return r
	}
}
