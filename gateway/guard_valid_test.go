package gateway

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestGuardAnswerNotVouched: an answer the gateway composed may carry raw
// JSON it did not validate (json.Marshal copies a json.RawMessage, such
// as a cached catalog's schema, without checking its UTF-8), so it is not
// vouched for: the built-in shape filter's output is validated in full and
// invalid UTF-8 never reaches the model. (The shape filter keeps the head
// of a text item, so the bytes are put there too: GuardAnswer takes any
// answer.)
func TestGuardAnswerNotVouched(t *testing.T) {
	_, g := filterWorld(t, "filters:\n  - module: builtin:shape\n    stage: context\n    onError: fail-open\n    config: {budgetBytes: 2048}\n")
	bad := strings.Repeat("schema text \xff\xfe ", 200)
	answer := `{"content":[{"type":"text","text":"` + bad + `"}],"structuredContent":{"tools":[{"inputSchema":{"description":"` + bad + `"}}]}}`
	out, err := g.GuardAnswer(ctx(t), FindCapability, []byte(answer))
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(out) {
		t.Fatalf("invalid UTF-8 reached the model: %.300q", out)
	}
	if len(out) > 2048 {
		t.Fatalf("the answer is %d bytes, over the 2048-byte budget", len(out))
	}
}
