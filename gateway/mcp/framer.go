package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// DefaultMaxLineBytes is the inbound line cap when none is configured.
const DefaultMaxLineBytes = 4 << 20

// framerChunk is the read size. The framer never holds more than
// maxLine+framerChunk bytes, whatever the server writes.
const framerChunk = 64 << 10

// stealAt is the line length from which a complete line takes over the read
// buffer instead of being copied out of it.
const stealAt = framerChunk

// Framer splits a byte stream into newline-terminated JSON-RPC messages with
// a hard cap on the length of one line. A line is refused as soon as its bytes
// exceed the cap, before any newline arrives, so an unterminated flood cannot
// grow memory. Blank lines are skipped and a trailing "\r" is tolerated.
//
// A Framer is not safe for concurrent use.
type Framer struct {
	r       io.Reader
	max     int
	buf     []byte // unconsumed bytes are buf[start:end]
	start   int
	end     int
	scanned int   // bytes of buf[start:end] already known to hold no '\n'
	err     error // sticky: read error or fatal framing error
	server  string
}

// NewFramer returns a Framer reading r with lines capped at maxLine bytes
// (excluding the newline and a trailing "\r"). maxLine <= 0 means
// DefaultMaxLineBytes.
func NewFramer(r io.Reader, maxLine int) *Framer {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	return &Framer{r: r, max: maxLine}
}

// Buffered reports how many bytes the framer currently holds; it never
// exceeds the line cap plus 64 KiB.
func (f *Framer) Buffered() int { return cap(f.buf) }

// holdsLine reports whether a whole line is buffered already: the next
// ReadLine returns without reading.
func (f *Framer) holdsLine() bool {
	return f.err == nil && bytes.IndexByte(f.buf[f.start+f.scanned:f.end], '\n') >= 0
}

// ReadLine returns the next non-blank line without its newline and trailing
// "\r". The returned slice is owned by the caller. At the end of the stream
// it returns io.EOF; a stream that ends inside a line returns an *Error with
// CodeClosed; a line over the cap returns an *Error with CodeProtocol wrapping
// ErrLineTooLong, after which the Framer is unusable.
func (f *Framer) ReadLine() ([]byte, error) {
	for {
		line, err := f.readRaw()
		if err != nil {
			return nil, err
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if blank(line) {
			continue
		}
		return line, nil
	}
}

// Next reads and classifies the next message. A line that is valid UTF-8 but
// not a JSON-RPC message is returned in Message.Raw together with an error
// wrapping ErrNoise; the Framer stays usable after it, as it does after an
// invalid-UTF-8 or malformed line (CodeProtocol).
func (f *Framer) Next() (Message, error) {
	line, err := f.ReadLine()
	if err != nil {
		return Message{}, err
	}
	m, err := Classify(line)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Server == "" && f.server != "" {
			e.Server = f.server
		}
	}
	return m, err
}

// readRaw returns the next line including a possible trailing '\r'.
func (f *Framer) readRaw() ([]byte, error) {
	for {
		if i := bytes.IndexByte(f.buf[f.start+f.scanned:f.end], '\n'); i >= 0 {
			nl := f.start + f.scanned + i
			n := nl - f.start
			if n > f.max && !(n == f.max+1 && f.buf[nl-1] == '\r') {
				return nil, f.fail(f.tooLong())
			}
			return f.take(nl), nil
		}
		f.scanned = f.end - f.start
		if f.scanned > f.max+1 || (f.scanned == f.max+1 && f.buf[f.end-1] != '\r') {
			return nil, f.fail(f.tooLong())
		}
		if f.err != nil {
			if f.err == io.EOF && !blank(f.buf[f.start:f.end]) {
				n := f.end - f.start
				f.start, f.end, f.scanned = 0, 0, 0
				f.err = &Error{Code: CodeClosed, Server: f.server, Op: "read",
					Message: fmt.Sprintf("server closed stdout in the middle of a line (%d bytes without a newline)", n),
					Err:     io.ErrUnexpectedEOF}
			}
			return nil, f.err
		}
		f.fill()
	}
}

// take hands out buf[start:nl] and consumes it together with the newline.
func (f *Framer) take(nl int) []byte {
	n := nl - f.start
	var line []byte
	if n >= stealAt {
		// Give the buffer away: copying megabytes would cost more than
		// allocating a fresh buffer for the few bytes after the newline.
		line = f.buf[f.start:nl:nl]
		rest := f.end - (nl + 1)
		nb := make([]byte, max(rest, framerChunk))
		copy(nb, f.buf[nl+1:f.end])
		f.buf, f.start, f.end = nb, 0, rest
	} else {
		line = make([]byte, n)
		copy(line, f.buf[f.start:nl])
		f.start = nl + 1
		if f.start == f.end {
			f.start, f.end = 0, 0
		}
	}
	f.scanned = 0
	return line
}

// fill reads one chunk, keeping the buffer within max+framerChunk bytes.
func (f *Framer) fill() {
	limit := f.max + framerChunk
	if len(f.buf)-f.end < framerChunk {
		if f.start > 0 {
			copy(f.buf, f.buf[f.start:f.end])
			f.end -= f.start
			f.start = 0
		}
		if len(f.buf)-f.end < framerChunk && len(f.buf) < limit {
			size := max(2*len(f.buf), f.end+framerChunk, framerChunk)
			size = min(size, limit)
			nb := make([]byte, size)
			copy(nb, f.buf[:f.end])
			f.buf = nb
		}
	}
	room := min(len(f.buf)-f.end, framerChunk)
	n, err := f.r.Read(f.buf[f.end : f.end+room])
	if n < 0 || n > room {
		n, err = 0, errors.New("mcp: reader returned an invalid count")
	}
	f.end += n
	if err != nil {
		f.err = err
	} else if n == 0 {
		// A reader returning (0, nil) repeatedly would spin; io.Reader
		// discourages it, and the next call simply reads again.
		return
	}
}

func (f *Framer) tooLong() *Error {
	return &Error{Code: CodeProtocol, Server: f.server, Op: "read", Err: ErrLineTooLong,
		Message: "inbound line exceeds the " + strconv.Itoa(f.max) +
			"-byte cap; raise maxLineBytes in the server's declaration if its messages really are this large"}
}

func (f *Framer) fail(e *Error) error {
	f.err = e
	f.buf, f.start, f.end, f.scanned = nil, 0, 0, 0
	return e
}

// blank reports whether a line holds only spaces, tabs and carriage returns.
func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
