package mcp

import (
	"bufio"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"sluice/gateway/internal/rawio"
	"sluice/gateway/proc"
)

// stdio is the Transport over a server's stdin and stdout: one message per
// line, read by a Framer with its line cap, written through a 64 KiB
// buffer so that small messages queued together leave in one write.
type stdio struct {
	server string
	framer *Framer
	r      io.Reader
	w      io.WriteCloser
	raw    io.Writer // w, through raw system calls where it can be (rawio)
	bw     *bufio.Writer
	armed  bool                // a write deadline is set on w (sendDirect); only the client's current writer touches it
	closer func() proc.Outcome // tears the server down; nil: nothing to do
	proc   *proc.Process       // for exit status and stderr; nil over bare pipes

	closing   chan struct{} // closed when Close starts
	closeOnce sync.Once
	out       proc.Outcome
}

// newStdio is the stdio transport over r (the server's stdout) and w (its
// stdin). closer, if not nil, tears the server down after w is closed; r
// is closed last when it is an io.Closer.
func newStdio(server string, r io.Reader, w io.WriteCloser, closer func() proc.Outcome, p *proc.Process, maxLine int) *stdio {
	in := r
	if rf, ok := r.(*os.File); ok {
		if raw, ok := rawio.New(rf); ok {
			in = raw
		}
	}
	var out io.Writer = w
	if wf, ok := w.(*os.File); ok {
		if raw, ok := rawio.New(wf); ok {
			out = raw
		}
	}
	f := NewFramer(in, maxLine)
	f.server = server
	return &stdio{server: server, framer: f, r: r, w: w, raw: out, bw: bufio.NewWriterSize(out, coalesceBytes), closer: closer, proc: p, closing: make(chan struct{})}
}

func (s *stdio) Send(msg []byte) error {
	if s.armed {
		// A direct write left its deadline behind: the writer goroutine
		// writes without one.
		if err := s.w.(deadlineWriter).SetWriteDeadline(time.Time{}); err != nil {
			return s.writeErr(err)
		}
		s.armed = false
	}
	if _, err := s.bw.Write(msg); err != nil {
		return s.writeErr(err)
	}
	if err := s.bw.WriteByte('\n'); err != nil {
		return s.writeErr(err)
	}
	return nil
}

// directSender is a transport a caller may write one message to itself
// when nothing else is being written (see Client.sendDirect).
type directSender interface {
	// canSendDirect reports whether sendDirect can give up on a full
	// pipe.
	canSendDirect() bool
	// sendDirect writes msg and its newline unless the server is slow
	// to take them; it returns how many of those bytes were written,
	// and errNotTaken when not all. Only the client's current writer
	// calls it, with nothing buffered.
	sendDirect(msg []byte) (int, error)
}

// errNotTaken is sendDirect's answer when the server did not take the
// whole line at once: the writer goroutine finishes it.
var errNotTaken = errors.New("mcp: the server's stdin did not take the line at once")

type deadlineWriter interface {
	SetWriteDeadline(time.Time) error
}

// canSendDirect: a pipe written with raw system calls (never waits), or
// one the runtime polls, which takes a write deadline; a bare io.Pipe
// does neither.
func (s *stdio) canSendDirect() bool {
	if _, ok := s.raw.(*rawio.File); ok {
		return true
	}
	dw, ok := s.w.(deadlineWriter)
	return ok && dw.SetWriteDeadline(time.Time{}) == nil
}

func (s *stdio) sendDirect(msg []byte) (int, error) {
	// One write of the line and its newline: msg has room for it when
	// encodeRequest made it, and the newline is never seen by msg's owner.
	frame := append(msg[:len(msg):cap(msg)], '\n')
	if rf, ok := s.raw.(*rawio.File); ok {
		// What the pipe has room for now, and no deadline to arm.
		n, err := rf.TryWrite(frame)
		switch {
		case err != nil:
			return n, s.writeErr(err)
		case n < len(frame):
			return n, errNotTaken
		}
		return n, nil
	}
	if err := s.w.(deadlineWriter).SetWriteDeadline(time.Now().Add(directWait)); err != nil {
		return 0, s.writeErr(err)
	}
	s.armed = true // cleared by the next Send, not here: one deadline change per direct write
	n, err := s.raw.Write(frame)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return n, errNotTaken
		}
		return n, s.writeErr(err)
	}
	return n, nil
}

func (s *stdio) Flush() error {
	if err := s.bw.Flush(); err != nil {
		return s.writeErr(err)
	}
	return nil
}

func (s *stdio) writeErr(err error) error {
	if s.isClosing() {
		return err
	}
	return &Error{Code: CodeClosed, Server: s.server, Op: "write",
		Message: "server stopped accepting input" + s.exitStatus(), StderrTail: s.stderrTail(), Err: err}
}

// holdsMessage reports whether the next Receive returns without reading
// (see Client.readLoop).
func (s *stdio) holdsMessage() bool { return s.framer.holdsLine() }

func (s *stdio) Receive() ([]byte, error) {
	line, err := s.framer.ReadLine()
	if err == nil {
		return line, nil
	}
	if e, ok := err.(*Error); ok {
		cp := *e
		if cp.Code == CodeClosed {
			cp.Message += s.exitStatus()
			cp.StderrTail = s.stderrTail()
		}
		return nil, &cp
	}
	if s.isClosing() {
		return nil, &Error{Code: CodeClosed, Server: s.server, Op: "read", Message: "client closed", Err: err}
	}
	msg := "server closed its stdout"
	if err != io.EOF {
		msg = "reading the server's stdout failed"
	}
	return nil, &Error{Code: CodeClosed, Server: s.server, Op: "read", Message: msg + s.exitStatus(), StderrTail: s.stderrTail(), Err: err}
}

// Close closes the server's stdin, runs the closer (for Start: the process
// group's SIGTERM/SIGKILL escalation), then closes its stdout.
func (s *stdio) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		_ = s.w.Close()
		if s.closer != nil {
			s.out = s.closer()
		} else {
			s.out = proc.Outcome{Complete: true, Stage: "exited"}
		}
		if rc, ok := s.r.(io.Closer); ok {
			_ = rc.Close()
		}
	})
	return nil
}

func (s *stdio) outcome() proc.Outcome { return s.out }

func (s *stdio) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// exitStatus says how the server process ended, waiting a moment for it
// (a server that closed its stdout is usually exiting); "" over bare pipes
// or while the client is closing.
func (s *stdio) exitStatus() string {
	if s.proc == nil {
		return ""
	}
	t := time.NewTimer(exitStatusGrace)
	defer t.Stop()
	select {
	case <-s.proc.Exited():
		if e := s.proc.ExitError(); e != nil {
			return " (process exited: " + e.Error() + ")"
		}
		return " (process exited with status 0)"
	case <-s.closing:
	case <-t.C:
	}
	return ""
}

func (s *stdio) stderrTail() string {
	if s.proc == nil {
		return ""
	}
	return s.proc.StderrTail()
}
