package main

import (
	"flag"
	"fmt"
	"io"
	"math"

	"sluice/gateway"
)

func init() {
	register("result", &command{
		summary: "print a stored (offloaded) result by its handle",
		help: `Usage: sluice result HANDLE [--offset N] [--length N] [--json]

When a result is over the context budget, the shape filter keeps a trimmed
version for the model and stores the full result under a handle (r- and 32
hex digits), named in the result's last text item. This prints it.

  (no flags)    the whole stored result from --offset to the end, byte for
                byte (the stored bytes are the full MCP result as JSON)
  --offset N    start N bytes in (default 0)
  --length N    print one page of at most N bytes (up to 1 MiB); where the
                next page starts is printed on stderr
  --json        print one page as JSON: {"handle", "offset", "length",
                "total", "data", "eof", "next"} ("encoding": "base64" when
                the bytes are not UTF-8); without --length the page is up
                to 1 MiB

Pages end on a UTF-8 character boundary, and an offset inside a character
starts at that character. Stored results expire (results.ttlMs, default 24
hours) and the oldest are evicted to stay under results.quotaBytes (default
256 MiB).

Exit status:
  0  printed
  1  sluice failed (unreadable store)
  2  bad flags, not a handle, unknown or expired handle, offset past the end
`,
		run: runResult,
	})
}

func runResult(e *env) int {
	fs := flag.NewFlagSet("result", flag.ContinueOnError)
	offset := int64Flag(fs, "offset", 0, 0, math.MaxInt64)
	length := int64Flag(fs, "length", 0, 1, gateway.MaxResultPage)
	asJSON := fs.Bool("json", false, "")
	pos, code, ok := flagsOrExit(e, "result", fs)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(e, "result", "want exactly one HANDLE, got %d arguments", len(pos))
	}
	lengthSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "length" {
			lengthSet = true
		}
	})
	g, closeFn, code, ok := openGateway(e, "result", "")
	if !ok {
		return code
	}
	defer closeFn()
	handle := pos[0]
	term := isTerminal(e.stdout)

	if *asJSON || lengthSet {
		n := *length
		if !lengthSet {
			n = gateway.MaxResultPage
		}
		p, err := g.ReadResult(handle, *offset, n)
		if err != nil {
			return reportErr(e.stderr, "result", err)
		}
		if *asJSON {
			if err := writeJSON(e.stdout, p); err != nil {
				return exitFailure
			}
			return exitOK
		}
		if err := writeData(e.stdout, p.Data, term); err != nil {
			return exitFailure
		}
		if p.EOF {
			fmt.Fprintf(e.stderr, "sluice result: bytes %d-%d of %d (end)\n", p.Offset, p.Next, p.Total)
		} else {
			fmt.Fprintf(e.stderr, "sluice result: bytes %d-%d of %d; next page: sluice result %s --offset %d --length %d\n", p.Offset, p.Next, p.Total, handle, p.Next, *length)
		}
		return exitOK
	}

	off := *offset
	for {
		p, err := g.ReadResult(handle, off, gateway.MaxResultPage)
		if err != nil {
			return reportErr(e.stderr, "result", err)
		}
		if err := writeData(e.stdout, p.Data, term); err != nil {
			return exitFailure
		}
		if p.EOF || p.Length == 0 {
			break
		}
		off = p.Next
	}
	if term {
		fmt.Fprintln(e.stdout)
	}
	return exitOK
}

// writeData prints stored bytes: exactly, or with control characters
// escaped when w is a terminal.
func writeData(w io.Writer, data string, term bool) error {
	if term {
		data = clean(data)
	}
	_, err := io.WriteString(w, data)
	return err
}
