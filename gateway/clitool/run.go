package clitool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"sluice/gateway/proc"
)

// resolved caches argv[0]'s absolute path: Spec.Program, or resolved
// once, on the first call. A failure is
// not cached (the program may be installed later).
type resolved struct {
	mu   sync.Mutex
	path string
}

func (t *Tool) resolve() (string, error) {
	t.exe.mu.Lock()
	defer t.exe.mu.Unlock()
	if t.exe.path != "" {
		return t.exe.path, nil
	}
	cmd := t.command
	// proc.Start applies the allow-list to bare names only; the resolved
	// path would be absolute, so the list is checked here, on the name
	// as declared.
	if !filepath.IsAbs(cmd) && !t.spec.AllowCommands.Allows(cmd) {
		return "", &proc.CommandError{Server: t.spec.Server, Command: cmd, Reason: proc.ReasonCommandNotAllowed, Err: proc.ErrCommandNotAllowed}
	}
	if t.spec.Program != "" {
		t.exe.path = t.spec.Program
		return t.exe.path, nil
	}
	// The gateway's PATH, not the declared env's: a declaration must not
	// be able to redirect an allowed name to a program of its own.
	exe, err := proc.ResolveCommand(cmd, os.Getenv("PATH"))
	if err != nil {
		var ce *proc.CommandError
		if errors.As(err, &ce) {
			ce.Server = t.spec.Server
		}
		return "", err
	}
	t.exe.path = exe
	return exe, nil
}

// Call validates args, renders the argv and runs it: in its own process
// group, with stdin closed, under the tool's timeout (time spent waiting
// for one of the MaxConcurrent slots included), with stdout capped.
//
// A command that ran to an end yields an MCP CallToolResult as JSON; a
// non-zero exit is such a result with isError set, the exit status and the
// last lines of stderr. Everything else is an error: *ArgError (refused
// before anything ran), *proc.CommandError / *proc.EnvError /
// *proc.CwdError / *proc.SpawnError (could not start), ErrTimeout,
// *OutputError, or the context's error. ErrorResult turns any of them into
// a tool result.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	argv, err := t.Argv(args)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.spec.Timeout)
	defer cancel()
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, t.ctxErr(ctx, "while waiting for one of its "+fmt.Sprint(t.spec.MaxConcurrent)+" concurrent runs to finish")
	}
	defer func() { <-t.sem }()
	exe, err := t.resolve()
	if err != nil {
		return nil, err
	}
	p, err := proc.Start(proc.Spec{
		Server:          t.spec.Server,
		Command:         exe,
		Args:            argv[1:],
		Dir:             t.spec.Dir,
		Root:            t.spec.Root,
		Env:             t.spec.Env,
		PassEnv:         t.spec.PassEnv,
		StdinGrace:      t.spec.StdinGrace,
		KillGrace:       t.spec.KillGrace,
		KillBound:       t.spec.KillBound,
		StderrTailBytes: stderrTailBytes,
		NoWatchdog:      t.spec.NoWatchdog,
		Stderr:          t.spec.Stderr,
		Scrub:           t.spec.Scrub,
	})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return t.collect(ctx, p)
}

func (t *Tool) ctxErr(ctx context.Context, when string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w after %s %s; its process group was stopped (raise timeoutMs if it needs longer)", t.spec.Name, ErrTimeout, t.spec.Timeout, when)
	}
	return fmt.Errorf("%s: %w", t.spec.Name, ctx.Err())
}

type readResult struct {
	out []byte
	err error
}

func (t *Tool) collect(ctx context.Context, p *proc.Process) (json.RawMessage, error) {
	p.Stdin().Close()
	limit := t.spec.MaxOutputBytes
	ch := make(chan readResult, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(p.Stdout(), int64(limit)+1))
		ch <- readResult{b, err}
	}()
	var out []byte
	select {
	case r := <-ch:
		out = r.out
	case <-ctx.Done():
		p.Close()
		<-ch
		return nil, t.ctxErr(ctx, "")
	}
	if len(out) > limit {
		p.Close()
		return nil, &OutputError{Tool: t.spec.Name, Msg: fmt.Sprintf("stdout passed the %d-byte cap, so the command was stopped; narrow the request (or raise maxOutputBytes)", limit)}
	}
	select {
	case <-p.Exited():
	case <-ctx.Done():
		p.Close()
		return nil, t.ctxErr(ctx, "")
	}
	p.Close()
	if err := p.ExitError(); err != nil {
		return t.exitResult(err, p.StderrTail(), out), nil
	}
	return t.result(out)
}

// exitResult is the isError result of a command that did not exit 0.
func (t *Tool) exitResult(err error, stderr string, stdout []byte) json.RawMessage {
	var b strings.Builder
	var ee *proc.ExitError
	if errors.As(err, &ee) && ee.Signal == 0 {
		fmt.Fprintf(&b, "%s exited with status %d", filepath.Base(t.command), ee.Code)
	} else {
		fmt.Fprintf(&b, "%s failed: %s", filepath.Base(t.command), strings.TrimPrefix(err.Error(), "server "+t.spec.Server+": "))
	}
	tail := lastLines(stderr, stderrLines)
	what := "stderr"
	if tail == "" {
		tail, what = lastLines(string(stdout), stderrLines), "stdout"
	}
	if tail != "" {
		fmt.Fprintf(&b, "; last lines of %s:\n%s", what, tail)
	}
	return textResult(b.String(), true)
}

func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\r\n")
	if s == "" {
		return ""
	}
	if len(s) > 4096 {
		s = s[len(s)-4096:]
		for len(s) > 0 && !utf8.RuneStart(s[0]) {
			s = s[1:]
		}
		s = "…" + s
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// result turns a successful run's stdout into a CallToolResult.
func (t *Tool) result(out []byte) (json.RawMessage, error) {
	switch t.spec.Output {
	case OutputJSON:
		trimmed := bytes.TrimSpace(out)
		if !json.Valid(trimmed) {
			var v any
			err := json.Unmarshal(trimmed, &v)
			msg := "stdout is not JSON"
			if len(trimmed) == 0 {
				msg = "stdout is empty, not JSON"
			} else if err != nil {
				msg += ": " + err.Error()
			}
			return nil, &OutputError{Tool: t.spec.Name, Msg: msg + " (the tool declares output: json)"}
		}
		var sc bytes.Buffer
		if trimmed[0] != '{' {
			// structuredContent must be an object.
			sc.WriteString(`{"result":`)
			json.Compact(&sc, trimmed)
			sc.WriteByte('}')
		} else {
			json.Compact(&sc, trimmed)
		}
		return structuredResult(string(trimmed), sc.Bytes()), nil
	case OutputLines:
		s := strings.TrimSuffix(string(out), "\n")
		var lines []string
		if s != "" {
			lines = strings.Split(s, "\n")
		}
		var sc bytes.Buffer
		sc.WriteString(`{"lines":[`)
		for i, l := range lines {
			if i > 0 {
				sc.WriteByte(',')
			}
			writeString(&sc, strings.TrimSuffix(l, "\r"))
		}
		sc.WriteString(`]}`)
		return structuredResult(string(out), sc.Bytes()), nil
	}
	return textResult(string(out), false), nil
}

func textResult(text string, isError bool) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"content":[{"type":"text","text":`)
	writeString(&b, text)
	b.WriteString(`}]`)
	if isError {
		b.WriteString(`,"isError":true`)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func structuredResult(text string, sc []byte) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"content":[{"type":"text","text":`)
	writeString(&b, text)
	b.WriteString(`}],"structuredContent":`)
	b.Write(sc)
	b.WriteByte('}')
	return b.Bytes()
}

// ErrorResult is the isError CallToolResult that reports err to a model.
func ErrorResult(err error) json.RawMessage { return textResult(err.Error(), true) }
