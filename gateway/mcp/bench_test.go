package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/gateway/proc"
)

// benchLines builds n copies of a response line of about size bytes whose
// text holds escapes and non-ASCII, like real tool output.
func benchLines(size, n int) []byte {
	unit := `line with \"quotes\", tabs\t and ünïcödé ✓\n`
	pre := `{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"`
	post := `"}],"isError":false}}`
	body := strings.Repeat(unit, max(1, (size-len(pre)-len(post))/len(unit)+1))
	line := pre + body[:max(0, size-len(pre)-len(post))] + post
	// Do not cut an escape or a rune in half.
	for !json.Valid([]byte(line)) {
		body = body[:len(body)-1]
		line = pre + body[:min(len(body), max(0, size-len(pre)-len(post)))] + post
	}
	return bytes.Repeat([]byte(line+"\n"), n)
}

type baselineMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *RPCError       `json:"error"`
}

func runFramer(b *testing.B, input []byte, want int) {
	f := NewFramer(bytes.NewReader(input), 8<<20)
	n := 0
	for {
		m, err := f.Next()
		if err == io.EOF {
			break
		}
		if err != nil || m.Kind != KindResponse {
			b.Fatal(err)
		}
		n++
	}
	if n != want {
		b.Fatalf("%d messages, want %d", n, want)
	}
}

// runBaseline is what a straightforward client does: bufio.Reader lines,
// json.Unmarshal into an envelope with raw members.
func runBaseline(b *testing.B, input []byte, want int) {
	r := bufio.NewReaderSize(bytes.NewReader(input), 64<<10)
	n := 0
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break
		}
		var m baselineMsg
		if err := json.Unmarshal(line, &m); err != nil || m.Result == nil {
			b.Fatal(err)
		}
		n++
	}
	if n != want {
		b.Fatalf("%d messages, want %d", n, want)
	}
}

// BenchmarkFramer compares the framer with bufio.Reader + json.Unmarshal on
// the same input. The ratio sub-benchmark interleaves both and reports
// baseline-time/framer-time as "speedup" (>1: the framer is faster).
func BenchmarkFramer(b *testing.B) {
	for _, sz := range []struct {
		name    string
		size, n int
	}{{"small-200B", 200, 5000}, {"large-3MB", 3 << 20, 1}} {
		input := benchLines(sz.size, sz.n)
		b.Run(sz.name+"/framer", func(b *testing.B) {
			b.SetBytes(int64(len(input)))
			for b.Loop() {
				runFramer(b, input, sz.n)
			}
		})
		b.Run(sz.name+"/baseline", func(b *testing.B) {
			b.SetBytes(int64(len(input)))
			for b.Loop() {
				runBaseline(b, input, sz.n)
			}
		})
		b.Run(sz.name+"/ratio", func(b *testing.B) {
			b.SetBytes(int64(2 * len(input)))
			var tf, tb time.Duration
			for b.Loop() {
				t0 := time.Now()
				runFramer(b, input, sz.n)
				t1 := time.Now()
				runBaseline(b, input, sz.n)
				tf += t1.Sub(t0)
				tb += time.Since(t1)
			}
			mb := float64(len(input)) * float64(b.N) / 1e6
			b.ReportMetric(mb/tf.Seconds(), "framer-MB/s")
			b.ReportMetric(mb/tb.Seconds(), "baseline-MB/s")
			b.ReportMetric(tb.Seconds()/tf.Seconds(), "speedup")
		})
	}
}

// benchServer is a minimal MCP server over real pipes: it answers
// initialize and every request with a fixed result echoing the id. The same
// server serves the client and the raw relay.
type benchServer struct {
	cr, sw *os.File // client reads cr; server writes sw
	sr, cw *os.File // server reads sr; client writes cw
	done   chan struct{}
}

func newBenchServer(b testing.TB) *benchServer {
	cr, sw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	sr, cw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	s := &benchServer{cr: cr, sw: sw, sr: sr, cw: cw, done: make(chan struct{})}
	go s.serve()
	return s
}

var benchResult = []byte(`,"result":{"content":[{"type":"text","text":"ok"}],"isError":false}}` + "\n")

func (s *benchServer) serve() {
	defer close(s.done)
	r := bufio.NewReaderSize(s.sr, 64<<10)
	w := bufio.NewWriterSize(s.sw, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		i := bytes.Index(line, []byte(`"id":`))
		if i < 0 {
			continue // notification
		}
		id := line[i+5:]
		id = id[:bytes.IndexAny(id, ",}")]
		w.WriteString(`{"jsonrpc":"2.0","id":`)
		w.Write(id)
		if bytes.Contains(line, []byte(`"initialize"`)) {
			w.WriteString(`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"bench"}}}` + "\n")
		} else {
			w.Write(benchResult)
		}
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}

func (s *benchServer) close() {
	s.cw.Close()
	<-s.done
	s.sw.Close()
	s.cr.Close()
	s.sr.Close()
}

func benchClient(b testing.TB) (*Client, *benchServer) {
	s := newBenchServer(b)
	c := NewClient(s.cr, s.cw, func() proc.Outcome {
		s.close()
		return proc.Outcome{Complete: true}
	}, &Options{Server: "bench", Era: EraLegacy})
	if err := c.Handshake(context.Background()); err != nil {
		b.Fatal(err)
	}
	return c, s
}

var benchArgs = json.RawMessage(`{"path":"a.txt","n":1}`)

// BenchmarkRoundTrip measures one tools/call through the client against a
// hand-written relay of the same request bytes over the same kind of pipes
// to the same server: the physical floor. "x-floor" is client/relay time.
func BenchmarkRoundTrip(b *testing.B) {
	relayLine := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"path":"a.txt","n":1}}}` + "\n")
	relay := func(b *testing.B, s *benchServer, r *bufio.Reader) {
		if _, err := s.cw.Write(relayLine); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
	call := func(b *testing.B, c *Client) {
		if _, err := c.CallTool(context.Background(), "echo", benchArgs, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("client", func(b *testing.B) {
		c, _ := benchClient(b)
		defer c.Close()
		for b.Loop() {
			call(b, c)
		}
	})
	b.Run("relay", func(b *testing.B) {
		s := newBenchServer(b)
		defer s.close()
		r := bufio.NewReader(s.cr)
		for b.Loop() {
			relay(b, s, r)
		}
	})
	b.Run("ratio", func(b *testing.B) {
		c, _ := benchClient(b)
		defer c.Close()
		s := newBenchServer(b)
		defer s.close()
		r := bufio.NewReader(s.cr)
		var tc, tr time.Duration
		for b.Loop() {
			t0 := time.Now()
			call(b, c)
			t1 := time.Now()
			relay(b, s, r)
			tc += t1.Sub(t0)
			tr += time.Since(t1)
		}
		b.ReportMetric(tc.Seconds()/tr.Seconds(), "x-floor")
		b.ReportMetric(float64(tc.Nanoseconds())/float64(b.N), "client-ns/call")
		b.ReportMetric(float64(tr.Nanoseconds())/float64(b.N), "relay-ns/call")
	})
}

// BenchmarkConcurrentCalls runs N callers on one connection; "speedup" is
// calls/s relative to the sequential client measured in the same run.
func BenchmarkConcurrentCalls(b *testing.B) {
	var seq float64 // ns per call, N=1
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			c, _ := benchClient(b)
			defer c.Close()
			start := time.Now()
			var wg sync.WaitGroup
			per := (b.N + n - 1) / n
			b.ResetTimer()
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						if _, err := c.CallTool(context.Background(), "echo", benchArgs, nil); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			el := time.Since(start)
			nsPerCall := float64(el.Nanoseconds()) / float64(per*n)
			b.ReportMetric(1e9/nsPerCall, "calls/s")
			if n == 1 {
				seq = nsPerCall
			} else if seq > 0 {
				b.ReportMetric(seq/nsPerCall, "speedup")
			}
		})
	}
}
