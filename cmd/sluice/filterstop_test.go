//go:build linux

package main

import (
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// recursionFilter is a filter (ABI mcpf v1) with no loop whose every call
// runs 2^60 calls of
//
//	(func $f (param i32) (result i32)
//	  (if (result i32) (i32.eqz (local.get 0))
//	    (then (i32.const 0))
//	    (else (i32.add (call $f (i32.sub (local.get 0) (i32.const 1)))
//	                   (call $f (i32.sub (local.get 0) (i32.const 1)))))))
//
// from mcpf_filter (call $f (i32.const 60)): it never returns by itself.
const recursionFilter = "\x00asm\x01\x00\x00\x00\x01\r\x03`\x00\x00`\x00\x01\x7f`\x01\x7f\x01\x7f\x03\x04\x03\x00\x01\x02" +
	"\x05\x03\x01\x00\x01\a&\x03\x06memory\x02\x00\vmcpf_abi_v1\x00\x00\vmcpf_filter\x00\x01" +
	"\n)\x03\x02\x00\v\t\x00A<\x10\x02\x1aA\x01\v\x1a\x00 \x00E\x04\x7fA\x00\x05 \x00A\x01k\x10\x02 \x00A\x01k\x10\x02j\v\v"

// fillFilter is a filter (ABI mcpf v1) with no loop and no call whose
// every call fills all of its 32 MiB of memory n times (memory.fill in
// straight-line code: 32 GiB of stores for n = 1000), then traps: a call
// not stopped at its deadline fails with the trap instead.
func fillFilter(n int) string {
	section := func(out []byte, id byte, body []byte) []byte {
		out = binary.AppendUvarint(append(out, id), uint64(len(body)))
		return append(out, body...)
	}
	name := func(b []byte, s string) []byte { return append(append(b, byte(len(s))), s...) }
	mod := []byte("\x00asm\x01\x00\x00\x00")
	mod = section(mod, 1, []byte{2, 0x60, 0, 0, 0x60, 0, 1, 0x7f}) // () -> (), () -> i32
	mod = section(mod, 3, []byte{2, 0, 1})
	mod = section(mod, 5, []byte{1, 0, 0x80, 0x04}) // 512 pages
	exports := append(name([]byte{3}, "memory"), 2, 0)
	exports = append(name(exports, "mcpf_abi_v1"), 0, 0)
	exports = append(name(exports, "mcpf_filter"), 0, 1)
	mod = section(mod, 7, exports)
	// local0 = memory.size << 16; n times memory.fill(0, 0, local0); unreachable
	body := []byte{1, 1, 0x7f, 0x3f, 0, 0x41, 16, 0x74, 0x21, 0}
	for range n {
		body = append(body, 0x41, 0, 0x41, 0, 0x20, 0, 0xfc, 0x0b, 0)
	}
	body = append(body, 0x00, 0x0b)
	code := binary.AppendUvarint([]byte{2, 2, 0, 0x0b}, uint64(len(body)))
	return string(section(mod, 10, append(code, body...)))
}

// runawayFilters are configured filters whose calls run for minutes
// (recursion) or seconds (memory.fill) without passing a loop of their
// own.
var runawayFilters = []struct{ file, mod string }{
	{"recurse.wasm", recursionFilter},
	{"fill.wasm", fillFilter(1000)},
}

// writeRunawayConfig declares the fixture server fx with the filter mod
// (written to file) on its echo tool only, fail-closed, with a 200 ms
// deadline.
func writeRunawayConfig(t *testing.T, w *world, name, file, mod string) {
	path := filepath.Join(w.root, file)
	if err := os.WriteFile(path, []byte(mod), 0o600); err != nil {
		t.Fatal(err)
	}
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-name", name) +
		"filters:\n  - module: " + path + "\n    capabilities: [\"fx__echo\"]\n    onError: fail-closed\n" +
		"    timeoutMs: 200\n    timeoutPerMiBMs: 1\n")
}

// wantStopped fails unless text is the agent's answer for a result the
// filter in file did not finish: withheld, its deadline named.
func wantStopped(t *testing.T, file, how, text string) {
	t.Helper()
	if !strings.Contains(text, file) || !strings.Contains(text, "deadline") || !strings.Contains(text, "withheld") || strings.Contains(text, "stop-me") {
		t.Errorf("%s: %.400q; want the result withheld, the filter's deadline named", how, text)
	}
}

// TestServeStopsRunawayFilterStdio: on stdio, where serve runs Go code on
// one thread, a configured filter that recurses without a loop, or fills
// its memory over and over in straight-line code, is stopped at its
// deadline: the call gets an error naming it, and the requests after it
// are answered, a second call through the filter too.
func TestServeStopsRunawayFilterStdio(t *testing.T) {
	for _, f := range runawayFilters {
		t.Run(f.file, func(t *testing.T) { serveStopsStdio(t, f.file, f.mod) })
	}
}

func serveStopsStdio(t *testing.T, file, mod string) {
	w := newWorld(t)
	name := uniqueName(t)
	writeRunawayConfig(t, w, name, file, mod)
	cmd := exec.Command(sluiceBin, "serve", "--mode", "flat", "--log-level", "debug")
	cmd.Env = nil
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOMAXPROCS=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	stdin, out, errb := startPiped(t, cmd)
	// answer sends one request and waits for its answer; a serve that
	// the filter froze answers nothing.
	answer := func(id, req string) string {
		t.Helper()
		io.WriteString(stdin, req+"\n")
		deadline := time.Now().Add(time.Minute)
		for {
			for _, line := range strings.Split(out.String(), "\n") {
				if strings.Contains(line, `"id":`+id+`,`) || strings.HasSuffix(line, `"id":`+id+`}`) {
					return line
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no answer to request %s a minute after it was sent:\nstdout:\n%s\nstderr:\n%s", id, out.String(), errb.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	answer("1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	echo := func(id string) string {
		return answer(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"stop-me"}}}`)
	}
	first := echo("2")
	t.Logf("the agent's answer: %s", first)
	wantStopped(t, file, "first call", first)
	if got := answer("3", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fx__stderr","arguments":{"text":"after"}}}`); !strings.Contains(got, `"result"`) {
		t.Errorf("an unfiltered call after the stopped one: %.400q", got)
	}
	wantStopped(t, file, "second call", echo("4"))
	if got := answer("5", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`); !strings.Contains(got, "fx__echo") {
		t.Errorf("tools/list after the stopped calls: %.400q", got)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), `"gomaxprocs":1`) {
		t.Errorf("serve on stdio did not run on one thread:\n%s", errb.String())
	}
	noneLeft(t, name)
}

// TestServeStopsRunawayFilterHTTP: the same over HTTP, on one thread
// (--procs 1), with another session's calls answered after the stopped
// ones.
func TestServeStopsRunawayFilterHTTP(t *testing.T) {
	for _, f := range runawayFilters {
		t.Run(f.file, func(t *testing.T) { serveStopsHTTP(t, f.file, f.mod) })
	}
}

func serveStopsHTTP(t *testing.T, file, mod string) {
	w := newWorld(t)
	name := uniqueName(t)
	writeRunawayConfig(t, w, name, file, mod)
	url, stop := startHTTPServe(t, "--procs", "1")
	session := func() *mcpHTTP {
		c := &mcpHTTP{t: t, url: url}
		c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return c
	}
	// call bounds postCall: a serve that the filter froze answers nothing.
	call := func(c *mcpHTTP, id int, capability, args string) string {
		t.Helper()
		type answer struct {
			text string
			err  error
		}
		done := make(chan answer, 1)
		go func() {
			text, _, err := postCall(c, id, capability, args)
			done <- answer{text, err}
		}()
		select {
		case a := <-done:
			if a.err != nil {
				t.Fatal(a.err)
			}
			return a.text
		case <-time.After(time.Minute):
			t.Fatalf("no answer to %s a minute after it was sent", capability)
			return ""
		}
	}
	c := session()
	wantStopped(t, file, "first call", call(c, 2, "fx__echo", `{"text":"stop-me"}`))
	wantStopped(t, file, "second call", call(c, 3, "fx__echo", `{"text":"stop-me"}`))
	if got := call(session(), 2, "fx__stderr", `{"text":"after"}`); !strings.Contains(got, "bytes to stderr") {
		t.Errorf("another session's unfiltered call after the stopped ones: %.400q", got)
	}
	stop()
	noneLeft(t, name)
}
