package front

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"sluice/gateway/internal/rawio"
)

// ServeStdio serves one agent over newline-delimited JSON-RPC on stdin and
// stdout until stdin reaches EOF, ctx is cancelled or (unless
// Options.NoSignals) SIGTERM or SIGINT arrives. Only protocol frames are
// written to stdout; logs go to Options.Logger (stderr by default).
//
// When stdout is os.Stdout, fd 1 is reserved for the protocol for the
// duration: frames go to a private duplicate and fd 1 points at stderr,
// so a stray write to os.Stdout anywhere in the process cannot corrupt the
// stream. fd 1 is restored on return.
//
// On the way out it waits up to ShutdownTimeout for running calls,
// cancels the rest, and calls b.Close. A clean end (EOF, cancellation,
// signal) returns nil.
func ServeStdio(ctx context.Context, b Backend, opts *Options, stdin io.Reader, stdout io.Writer) error {
	f, err := newFront(b, opts)
	if err != nil {
		return err
	}
	if !f.opts.NoSignals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
		defer stop()
	}
	defer func() {
		if cerr := b.Close(); cerr != nil {
			f.log.Warn("closing the backend failed", "err", cerr)
		}
	}()
	f.start(ctx)
	defer f.close()

	if stdout == os.Stdout {
		proto, restore, rerr := reserveStdout()
		if rerr != nil {
			f.log.Warn("cannot reserve stdout for the protocol; stray writes to os.Stdout would corrupt it", "err", rerr)
		} else {
			defer restore()
			stdout = proto
			if rf, raw := rawio.New(proto); raw {
				f.log.Debug("writing stdout through the runtime's poller")
				stdout = rf
			}
		}
	}
	if stdin == os.Stdin {
		in, restore, ok, rerr := pollableStdin()
		switch {
		case rerr != nil:
			f.log.Debug("reading stdin with blocking reads", "err", rerr)
		case ok:
			f.log.Debug("reading stdin through the runtime's poller")
			defer restore()
			stdin = in
			if rf, raw := rawio.New(in); raw { // always: in is non-blocking
				stdin = rf
			}
		}
	}
	// Frames reach the SDK through filterFrames, which answers malformed
	// lines itself; both write whole frames to out.
	out := &lockedWriter{w: stdout}
	pr, pw := io.Pipe()
	// Calls on the fast path drain like the SDK's on shutdown: they end
	// with the hard bound, not with ctx.
	fast := newFastStdio(f, context.WithoutCancel(ctx), func(frame []byte) error {
		_, err := pw.Write(frame)
		return err
	})
	fast.out = out
	defer fast.workers.close()
	go filterFrames(stdin, pw, out, f.opts.MaxLineBytes, f.log, fast.hook(), fast)
	t := &mcp.IOTransport{Reader: pr, Writer: nopWriteCloser{out}, MaxLineLength: -1} // filterFrames caps lines
	var conn *cancelConn
	ss, err := f.srv.Connect(ctx, cancelTransport{
		Transport: t,
		conn:      &conn,
		onEOF: func(c *cancelConn) {
			// The agent closed stdin: answer what it asked first.
			if c.waitAnswered(f.opts.ShutdownTimeout) {
				return
			}
			f.log.Warn("drain bound reached after stdin EOF; cancelling in-flight calls", "bound", f.opts.ShutdownTimeout.String())
			f.stopHard()
			if !c.waitAnswered(2 * time.Second) {
				f.log.Warn("closing with responses still unwritten")
			}
		},
		bad: func(problem string) {
			answerBadFrame(out, nil, jsonrpc.CodeInvalidRequest, "Invalid Request: "+problem, f.log)
		},
	}, nil)
	fast.connected(ss, conn)
	if err != nil {
		_ = pr.Close()
		return err
	}
	f.log.Info("serving MCP on stdio", "mode", string(f.opts.Mode))
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
		// stdin EOF (or a broken pipe): the agent is gone.
		f.drain(f.opts.ShutdownTimeout)
	case <-ctx.Done():
		f.drain(f.opts.ShutdownTimeout)
		if conn != nil && !conn.waitAnswered(2*time.Second) {
			f.log.Warn("closing with responses still unwritten")
		}
		_ = ss.Close()
		// We closed the session: whatever Wait reports now ("server is
		// closing", a closed connection) is the shutdown we asked for.
		if werr := <-done; werr != nil {
			f.log.Debug("stdio session closed on shutdown", "err", werr)
		}
		err = nil
	}
	f.log.Info("stdio session ended")
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !isClosedErr(err) {
		return err
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func isClosedErr(err error) bool {
	return errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed) || errors.Is(err, mcp.ErrConnectionClosed)
}
