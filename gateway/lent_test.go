package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// lentChain: redact at the result stage (it replaces the result: a lent
// buffer) and shape at the context stage (it replaces that again, and
// offloads its input, the redacted result). Generous deadlines: the
// buffers are tested here, not the deadline.
const lentChain = "filters:\n  - module: builtin:redact\n    timeoutMs: 30000\n" +
	"  - module: builtin:shape\n    stage: context\n    onError: fail-closed\n    timeoutMs: 30000\n    config: {budgetBytes: 2048}\n"

// TestLentOutputsGivenBack: through a chain of two filters that both
// replace the result, calls running at once each get their own answer,
// whole: the redacted intermediate output is given back only after shape
// read it (and after the offload store copied it: the stored result is
// the redacted text, not the 0xFF a -race build writes over a buffer
// given back), the final one when the caller releases it, once however
// often Release is called.
func TestLentOutputsGivenBack(t *testing.T) {
	_, g := filterWorld(t, lentChain)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				tag := fmt.Sprintf("w%d-i%d-", w, i)
				text := tag + awsKey + " " + strings.Repeat(tag, 6000/len(tag))
				res, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: json.RawMessage(`{"text":"` + text + `"}`)})
				if err != nil {
					errs <- err
					return
				}
				if !json.Valid(res.Result) || len(res.Result) > 2048 || strings.Contains(string(res.Result), awsKey) || !strings.Contains(string(res.Result), tag) {
					errs <- fmt.Errorf("call %s: answer not shaped from its own redacted result: %.300q", tag, res.Result)
					return
				}
				m := handleRe.FindSubmatch(res.Result)
				if m == nil {
					errs <- fmt.Errorf("call %s: no handle in %.300q", tag, res.Result)
					return
				}
				handle := string(m[0])
				res.Release()
				res.Release()
				if res.Result != nil {
					errs <- fmt.Errorf("Result after Release: %.100q", res.Result)
					return
				}
				page, err := g.ReadResult(handle, 0, 1<<20)
				if err != nil {
					errs <- err
					return
				}
				if !strings.Contains(page.Data, tag+"[REDACTED:aws-access-key-id] "+tag) || strings.ContainsRune(page.Data, 0xFFFD) || strings.Contains(page.Data, "\xff") {
					errs <- fmt.Errorf("call %s: the stored result is not its redacted text: %.300q", tag, page.Data)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestLentOutputsInCodeMode: a script's call result (redacted: a lent
// output) is given back once the sandbox converted it, and the script's
// final value (shaped: another) once it was copied; both reach the
// model whole.
func TestLentOutputsInCodeMode(t *testing.T) {
	_, g := filterWorld(t, lentChain+"sandbox: {}\n")
	for i := range 6 {
		tag := fmt.Sprintf("run%d-", i)
		res := execute(t, g, fmt.Sprintf(`
a = fx.echo(text = %q)
b = fx.echo(text = %q)
result = a + " | " + b + " | " + (%q * 800)
`, tag+"one "+awsKey, tag+"two "+awsKey, tag))
		if res.Error != nil {
			t.Fatalf("run %d: %+v", i, res.Error)
		}
		s := string(res.Result)
		if !json.Valid(res.Result) || strings.Contains(s, awsKey) || !strings.Contains(s, tag+"one [REDACTED:aws-access-key-id] | "+tag+"two [REDACTED:aws-access-key-id]") {
			t.Fatalf("run %d: result %.400q", i, s)
		}
	}
}
