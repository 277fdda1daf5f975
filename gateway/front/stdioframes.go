package front

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
// connection then sees a clean end of input. take, when set, is offered
// every well-formed single request first; one it reports taken is not
// passed on (the stdio fast path answers it).
func filterFrames(r io.Reader, dst *io.PipeWriter, out io.Writer, max int, log *slog.Logger, take func(*jsonrpc.Request) bool) {
	defer dst.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		tooLong := false
		if len(line)+len(chunk) > max+1 { // +1: the newline is not counted
			tooLong = true
		} else {
			line = append(line, chunk...)
		}
		if tooLong {
			line = line[:0]
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			answerBadFrame(out, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: frame longer than %d bytes", max), log)
			if err != nil {
				endFrames(err, log)
				return
			}
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if !passFrame(line, dst, out, log, take) {
				return // the connection stopped reading: it is closed
			}
		}
		line = line[:0]
		if err != nil {
			endFrames(err, log)
			return
		}
	}
}

func endFrames(err error, log *slog.Logger) {
	if !errors.Is(err, io.EOF) {
		log.Warn("reading stdin failed; treating it as the end of input", "err", err)
	}
}

// passFrame checks one line and forwards it, or answers it. It reports
// false once dst no longer accepts frames.
func passFrame(line []byte, dst io.Writer, out io.Writer, log *slog.Logger, take func(*jsonrpc.Request) bool) bool {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		answerBadFrame(out, nil, jsonrpc.CodeParseError, "Parse error: the line is not valid JSON", log)
		return true
	}
	if take != nil {
		// A plain tools/call is read without the SDK's decoder (and is
		// well-formed by construction when it is not taken).
		if req, ok := quickCall(line); ok {
			if take(req) {
				return true
			}
			return forwardFrame(line, dst)
		}
	}
	msg, id, problem := checkMessage(line)
	if problem != "" {
		answerBadFrame(out, id, jsonrpc.CodeInvalidRequest, "Invalid Request: "+problem, log)
		return true
	}
	if req, ok := msg.(*jsonrpc.Request); ok && take != nil && take(req) {
		return true
	}
	return forwardFrame(line, dst)
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
