package remote

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Caps on the event-stream parser. An event's data is capped by the
// message cap; everything else is small and fixed.
const (
	maxEventIDBytes  = 1024
	maxEventTypeLen  = 128
	maxRetry         = 60 * time.Second
	sseReadBufBytes  = 64 << 10
	maxCommentBytes  = 64 << 10
	maxFieldOverhead = 64 // "data: " and friends, on top of the data cap
)

// event is one dispatched server-sent event.
type event struct {
	typ      string // "" means "message"
	data     []byte
	id       string
	hasID    bool // the event carried an id field (possibly empty)
	retry    time.Duration
	hasRetry bool
}

// sseReader parses text/event-stream (the WHATWG "server-sent events"
// format) with every buffer bounded: a line longer than the cap, or an
// event whose data exceeds maxData, is an error, never a larger buffer.
type sseReader struct {
	r       *bufio.Reader
	maxData int
	started bool
	lines   [][]byte // lines split out of the current chunk at lone CRs
	lastCR  bool     // the previous chunk ended in a lone CR
	line    []byte   // reused line buffer
}

func newSSEReader(r io.Reader, maxData int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, sseReadBufBytes), maxData: maxData}
}

var errLineTooLong = errors.New("remote: event-stream line exceeds the cap")

// readLine returns the next line without its terminator (CRLF, LF or CR).
// The returned slice is valid until the next call.
func (s *sseReader) readLine() ([]byte, error) {
	if len(s.lines) > 0 {
		l := s.lines[0]
		s.lines = s.lines[1:]
		return l, nil
	}
	limit := s.maxData + maxFieldOverhead
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(chunk) > 0 {
			if s.lastCR {
				s.lastCR = false
				if chunk[0] == '\n' { // the LF of a CRLF split across reads
					chunk = chunk[1:]
					if len(chunk) == 0 && err == nil {
						continue
					}
				}
			}
			if len(s.line)+len(chunk) > limit {
				return nil, errLineTooLong
			}
			s.line = append(s.line, chunk...)
		}
		switch {
		case err == nil:
			return s.split(), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(s.line) > 0:
			// An unterminated last line is discarded by the format's rules,
			// but a lone CR terminates a line.
			if i := bytes.LastIndexByte(s.line, '\r'); i >= 0 {
				s.line = s.line[:i+1]
				return s.split(), nil
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// split turns s.line (ending in LF, or CR at EOF) into lines at lone CRs and
// returns the first.
func (s *sseReader) split() []byte {
	l := s.line
	if n := len(l); n > 0 && l[n-1] == '\n' {
		l = l[:n-1]
		if n := len(l); n > 0 && l[n-1] == '\r' {
			l = l[:n-1]
		}
	}
	if bytes.IndexByte(l, '\r') < 0 {
		return l
	}
	parts := bytes.Split(l, []byte{'\r'})
	if len(s.line) > 0 && s.line[len(s.line)-1] == '\r' {
		// a trailing lone CR: the final empty part is not a line; and a
		// following LF belongs to it.
		parts = parts[:len(parts)-1]
		s.lastCR = true
	}
	first := parts[0]
	s.lines = append(s.lines[:0], parts[1:]...)
	return first
}

// next returns the next event. Events without data are not dispatched
// (per the format), except that an id or retry on its own still updates the
// reader's caller through a data-less event with typ "" and data nil: the
// caller needs it for Last-Event-ID and the reconnect delay (MCP servers
// send such a priming event first).
func (s *sseReader) next() (event, error) {
	var ev event
	var data []byte
	hasData := false
	seen := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && seen && (ev.hasID || ev.hasRetry) && !hasData {
				return ev, nil
			}
			return event{}, err
		}
		if !s.started {
			s.started = true
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 {
			if hasData {
				ev.data = data
				return ev, nil
			}
			if ev.hasID || ev.hasRetry {
				return ev, nil
			}
			ev = event{}
			seen = false
			continue
		}
		if line[0] == ':' {
			if len(line) > maxCommentBytes {
				return event{}, errLineTooLong
			}
			continue
		}
		seen = true
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if hasData {
				if len(data)+1+len(value) > s.maxData {
					return event{}, fmt.Errorf("%w: an SSE event exceeds %d bytes", ErrMessageTooLarge, s.maxData)
				}
				data = append(data, '\n')
			} else if len(value) > s.maxData {
				return event{}, fmt.Errorf("%w: an SSE event exceeds %d bytes", ErrMessageTooLarge, s.maxData)
			}
			data = append(data, value...)
			hasData = true
		case "event":
			if len(value) <= maxEventTypeLen {
				ev.typ = string(value)
			} else {
				ev.typ = "\x00invalid"
			}
		case "id":
			if bytes.IndexByte(value, 0) < 0 && len(value) <= maxEventIDBytes {
				ev.id = string(value)
				ev.hasID = true
			}
		case "retry":
			if n, err := strconv.ParseUint(string(value), 10, 63); err == nil && len(value) > 0 {
				d := time.Duration(n) * time.Millisecond
				if n > uint64(maxRetry/time.Millisecond) {
					d = maxRetry
				}
				ev.retry, ev.hasRetry = d, true
			}
		}
	}
}
