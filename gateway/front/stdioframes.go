package front

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// lockedWriter serialises whole frames from the SDK's connection and from
// the frame filter onto one stream. Every caller writes one complete frame
// per Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// filterFrames reads newline-delimited frames from r and passes every line
// that holds a well-formed JSON-RPC message (or batch of them) on to dst,
// one line per Write. A line that is not JSON is answered with -32700, one
// that is JSON but no JSON-RPC message with -32600, and a line longer than
// max with -32600 (its bytes are discarded, never buffered) — each with id
// null unless the id could be read — and reading goes on. At the end of r
// (or a read error, which is logged) dst is closed with io.EOF: the SDK's
// connection then sees a clean end of input. t, when set, is offered
// every well-formed single request first; one it takes is not passed on
// (the stdio fast path answers it). ids, when set, registers every
// single request as in flight before it is passed on or taken: a request
// whose id is that of one in flight, or one read while maxInFlight
// others are unanswered, is answered here and goes no further. A request
// whose id is null is answered here too (-32600, id null): the SDK would
// read it as a notification and answer nothing.
func filterFrames(r io.Reader, dst *io.PipeWriter, out io.Writer, max int, log *slog.Logger, t frameTaker, ids idClaimer) {
	fr := &frameReader{br: bufio.NewReaderSize(r, 64<<10), dst: dst, out: out, max: max, log: log, t: t, ids: ids}
	fr.loopFn = fr.loop
	fr.loop()
}

// idClaimer registers the requests the agent sends as in flight (the
// stdio connection's bookkeeping, cancelConn).
type idClaimer interface {
	// claim registers id as that of a request in flight; claimDup when
	// a request with that id is, claimBusy when maxInFlight are.
	claim(id jsonrpc.ID) claimResult
}

type claimResult int

const (
	claimOK claimResult = iota
	claimDup
	claimBusy
)

// frameTaker takes requests over before the SDK decodes them (the stdio
// fast path).
type frameTaker interface {
	// take reports whether it took req. run, when not nil, is the call
	// to run at once: the reading goroutine runs it itself after reading
	// went on on another goroutine (spawn), so the call waits for no
	// hand-off between goroutines.
	take(req *jsonrpc.Request) (run takenCall, taken bool)
	// spawn runs fn on another goroutine.
	spawn(fn func())
}

// takenCall is a call a frameTaker took, to run at once (a *fastRun: an
// interface holding the pointer, not a method value, which would be one
// more allocation a call).
type takenCall interface{ run() }

// frameReader is filterFrames's state. One goroutine at a time reads:
// the one that runs loop, which hands loop on (spawn) before it runs a
// call it took.
type frameReader struct {
	br   *bufio.Reader
	line []byte
	dst  *io.PipeWriter
	out  io.Writer
	max  int
	log  *slog.Logger
	t    frameTaker
	ids  idClaimer
	// loopFn is loop as a func, made once: reading is handed on (spawn)
	// at every call taken, and a method value made there is an
	// allocation a call.
	loopFn func()
}

func (fr *frameReader) loop() {
	for {
		chunk, err := fr.br.ReadSlice('\n')
		tooLong := false
		if len(fr.line)+len(chunk) > fr.max+1 { // +1: the newline is not counted
			tooLong = true
		} else {
			fr.line = append(fr.line, chunk...)
		}
		if tooLong {
			fr.line = fr.line[:0]
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = fr.br.ReadSlice('\n')
			}
			answerBadFrame(fr.out, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: frame longer than %d bytes", fr.max), fr.log)
			if err != nil {
				fr.end(err)
				return
			}
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		var run takenCall
		if len(bytes.TrimSpace(fr.line)) > 0 {
			var ok bool
			if run, ok = passFrame(fr.line, fr.dst, fr.out, fr.log, fr.t, fr.ids); !ok {
				fr.dst.Close()
				return // the connection stopped reading: it is closed
			}
		}
		fr.line = fr.line[:0]
		if err != nil {
			fr.end(err)
			if run != nil {
				run.run()
			}
			return
		}
		if run != nil {
			fr.t.spawn(fr.loopFn)
			run.run()
			return
		}
	}
}

func (fr *frameReader) end(err error) {
	endFrames(err, fr.log)
	fr.dst.Close()
}

func endFrames(err error, log *slog.Logger) {
	// os.ErrClosed: ServeStdio returned and closed its duplicate of stdin
	// (stdin_unix.go) while this read waited; the session is over.
	if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
		log.Warn("reading stdin failed; treating it as the end of input", "err", err)
	}
}

// passFrame checks one line and forwards it, or answers it, or has t
// take it (run: the call t wants run now). It reports false once dst no
// longer accepts frames.
func passFrame(line []byte, dst io.Writer, out io.Writer, log *slog.Logger, t frameTaker, ids idClaimer) (run takenCall, ok bool) {
	line = bytes.TrimSpace(line)
	// One pass validates the line as encoding/json does and bounds its
	// nesting; a line it refuses is looked at again only to tell a line
	// that is not JSON from one nested too deep (the SDK's decoder
	// answers that).
	// The top-level members come with the validation (wholeObject), for
	// the plain call read below.
	var top [6]member
	_, ms, shallow := wholeObject(top[:0], line, maxDepth-1)
	if !shallow && !json.Valid(line) {
		answerBadFrame(out, nil, jsonrpc.CodeParseError, "Parse error: the line is not valid JSON", log)
		return nil, true
	}
	if t != nil && shallow {
		// A plain tools/call is read without the SDK's decoder (and is
		// well-formed by construction when it is not taken).
		if req, ok := callOf(ms); ok {
			if !claimed(req.ID, ids, out, log) {
				return nil, true
			}
			if run, taken := t.take(req); taken {
				return run, true
			}
			return nil, forwardFrame(line, dst)
		}
	}
	msg, id, problem := checkMessage(line)
	if problem != "" {
		answerBadFrame(out, id, jsonrpc.CodeInvalidRequest, "Invalid Request: "+problem, log)
		return nil, true
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		if !req.IsCall() {
			if nullID(line) {
				answerBadFrame(out, nil, jsonrpc.CodeInvalidRequest, "Invalid Request: the request id is null; an id must be a string or an integer (a notification has no id member)", log)
				return nil, true
			}
		} else {
			if !claimed(req.ID, ids, out, log) {
				return nil, true
			}
			if t != nil {
				if run, taken := t.take(req); taken {
					return run, true
				}
			}
		}
	}
	return nil, forwardFrame(line, dst)
}

// claimed registers a request's id as in flight (ids), and answers the
// request when that is refused: an id in flight gets -32600 with id null
// (its own id would name the request in flight, as the SDK says), no
// room gets errTooBusy. It reports whether the request goes on.
func claimed(id jsonrpc.ID, ids idClaimer, out io.Writer, log *slog.Logger) bool {
	if ids == nil {
		return true
	}
	switch ids.claim(id) {
	case claimDup:
		what := "the id of this request"
		if text, err := json.Marshal(id.Raw()); err == nil && len(text) <= 64 {
			what = "request id " + string(text)
		}
		answerBadFrame(out, nil, jsonrpc.CodeInvalidRequest, "Invalid Request: "+what+" is already in use by a request in flight; send each request with an id of its own", log)
		return false
	case claimBusy:
		log.Warn("answering a request read while too many are in flight", "bound", maxInFlight)
		if b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: errTooBusy}); err == nil {
			_, _ = out.Write(append(b, '\n'))
		}
		return false
	}
	return true
}

// nullID reports whether line, a valid JSON object the SDK decodes as a
// notification, has an id member that is null: a request whose id the
// SDK drops. The last id member counts, as in the SDK's decoder, and a
// key is compared as the decoder reads it (escapes decoded, case kept).
func nullID(line []byte) bool {
	null := false
	eachMember(line, func(k, v []byte) bool {
		key, plain := asciiString(k)
		if !plain && json.Unmarshal(k, &key) != nil {
			return true
		}
		if key == "id" {
			null = string(v) == "null"
		}
		return true
	})
	return null
}

// forwardFrame hands one frame to the SDK's connection; it reports false
// once that no longer reads.
func forwardFrame(line []byte, dst io.Writer) bool {
	frame := make([]byte, 0, len(line)+1)
	frame = append(append(frame, line...), '\n')
	_, err := dst.Write(frame)
	return err == nil
}

// checkMessage reports why line (valid JSON) is not a JSON-RPC message or
// batch the SDK can decode, and the request id when one could be read;
// a single message that is fine is returned decoded.
func checkMessage(line []byte) (msg jsonrpc.Message, id json.RawMessage, problem string) {
	if line[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil {
			return nil, nil, "a batch must be an array of messages"
		}
		if len(batch) == 0 {
			return nil, nil, "empty batch"
		}
		for _, m := range batch {
			if _, err := jsonrpc.DecodeMessage(m); err != nil {
				return nil, nil, "a message in the batch is malformed: " + err.Error()
			}
		}
		return nil, nil, ""
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &probe) == nil && validID(probe.ID) {
			id = probe.ID
		}
		return nil, id, err.Error()
	}
	return msg, nil, ""
}

// validID reports whether raw is a JSON-RPC request id: a string or an
// integer.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		return true
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// answerBadFrame writes an error response for a frame that never reached
// the SDK. id nil is written as null.
func answerBadFrame(out io.Writer, id json.RawMessage, code int64, msg string, log *slog.Logger) {
	log.Warn("answering a malformed stdin frame", "code", code, "problem", msg)
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	if err != nil {
		return
	}
	_, _ = out.Write(append(b, '\n'))
}
