package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"testing"

	"sluice/gateway/config"
)

// TestScrubMessageHidesEveryEscapedForm: a secret inside a JSON string is
// hidden as each encoder escapes it (Go's \u003c, PHP's \/, Python's
// \u00e9, a quote's \"), in any case, inside nested JSON text too; the
// message stays valid JSON and keeps everything else byte for byte.
func TestScrubMessageHidesEveryEscapedForm(t *testing.T) {
	ss := newScrubber([]string{"k3y-value-1234", "p<w>&/x\"1234", "sécret-mot-99"})
	for _, tc := range []struct{ in, want string }{
		{`{"id":1,"result":{"text":"key k3y-value-1234 refused"}}`, `{"id":1,"result":{"text":"key (hidden) refused"}}`},
		{`{"id":1,"result":{"text":"KEY K3Y-VALUE-1234"}}`, `{"id":1,"result":{"text":"KEY (hidden)"}}`},
		{`{"id":1,"result":{"text":"pw p\u003cw\u003e\u0026\/x\"1234."}}`, `{"id":1,"result":{"text":"pw (hidden)."}}`},
		{`{"id":1,"result":{"text":"pw p<w>&/x\"1234."}}`, `{"id":1,"result":{"text":"pw (hidden)."}}`},
		{`{"id":1,"result":{"text":"pw p\u003Cw\u003E\u0026/x\"1234."}}`, `{"id":1,"result":{"text":"pw (hidden)."}}`},
		{`{"id":1,"result":{"text":"s\u00e9cret-mot-99"}}`, `{"id":1,"result":{"text":"(hidden)"}}`},
		{`{"id":1,"result":{"text":"sécret-mot-99"}}`, `{"id":1,"result":{"text":"(hidden)"}}`},
		// JSON text inside a string: the secret escaped twice
		{`{"id":1,"result":{"text":"{\"pw\":\"p<w>&/x\\\"1234\"}"}}`, `{"id":1,"result":{"text":"{\"pw\":\"(hidden)\"}"}}`},
		// in a key, in an array, in an error
		{`{"id":1,"result":{"k3y-value-1234":[1,"a k3y-value-1234"]}}`, `{"id":1,"result":{"(hidden)":[1,"a (hidden)"]}}`},
		{`{"jsonrpc":"2.0","id":"7","error":{"code":-32000,"message":"bad key k3y-value-1234","data":{"k":"k3y-value-1234"}}}`,
			`{"jsonrpc":"2.0","id":"7","error":{"code":-32000,"message":"bad key (hidden)","data":{"k":"(hidden)"}}}`},
		// nothing to hide: the very bytes
		{`{"id":1,"result":{"text":"nothing \u003c here \/"}}`, `{"id":1,"result":{"text":"nothing \u003c here \/"}}`},
	} {
		got := ss.ScrubMessage([]byte(tc.in))
		if string(got) != tc.want {
			t.Errorf("ScrubMessage(%s)\n  = %s\nwant %s", tc.in, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("ScrubMessage(%s) = %s: not JSON", tc.in, got)
		}
	}
	in := []byte(`{"id":1,"result":{}}`)
	if got := ss.ScrubMessage(in); &got[0] != &in[0] {
		t.Error("a message with no secret was copied")
	}
}

// TestScrubMessageKeepsAdversarialMessagesValid: a secret that would not
// lie inside one string (a number, a match across a string's end or
// across members, one starting inside an escape) never leaves broken
// JSON and never stays; a response keeps its id.
func TestScrubMessageKeepsAdversarialMessagesValid(t *testing.T) {
	ss := newScrubber([]string{`ab","c`, "12345678", "n9876abc", `x":1,"y`, "zz]}zz9", "u0041bcdef", "0041qrstu9"})
	for _, tc := range []struct{ in, want string }{
		{`{"id":1,"result":{"a":"ab","c":1}}`, `{"id":1,"result":"(hidden)"}`},
		{`{"id":1,"result":{"n":12345678,"s":"ok"}}`, `{"id":1,"result":{"n":"(hidden)","s":"ok"}}`},
		{`{"id":1,"result":{"s":"\n9876abc"}}`, `{"id":1,"result":{"s":"\n9876abc"}}`},
		{`{"id":1,"result":{"s":"n9876ABC"}}`, `{"id":1,"result":{"s":"(hidden)"}}`},
		// a match inside an escape is no match, and stays; one after an
		// escaped backslash is
		{`{"id":1,"result":{"s":"\u0041bcdef \u0041qrstu9"}}`, `{"id":1,"result":{"s":"\u0041bcdef \u0041qrstu9"}}`},
		{`{"id":1,"result":{"s":"\\n9876abc \\\n9876abc"}}`, `{"id":1,"result":{"s":"\\(hidden) \\\n9876abc"}}`},
		{`{"id":2,"x":1,"y":2}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"the server's answer repeated a credential it was given; withheld"}}`},
		{`{"method":"notifications/message","x":1,"y":2}`, withheldNote},
		{`{"id":1,"result":{"a":["zz]}zz9",[]]}}`, `{"id":1,"result":{"a":["(hidden)",[]]}}`},
		// not JSON at all: scrubbed as text
		{`boot: key 12345678 loaded`, `boot: key (hidden) loaded`},
	} {
		got := ss.ScrubMessage([]byte(tc.in))
		if string(got) != tc.want {
			t.Errorf("ScrubMessage(%s)\n  = %s\nwant %s", tc.in, got, tc.want)
		}
		if json.Valid([]byte(tc.in)) && !json.Valid(got) {
			t.Errorf("ScrubMessage(%s) = %s: not JSON", tc.in, got)
		}
	}
	// deep nesting: replaced whole beyond the bound, still JSON
	deep := []byte(`{"id":1,"result":` + strings.Repeat("[", 100) + `"12345678"` + strings.Repeat("]", 100) + `}`)
	got := ss.ScrubMessage(deep)
	if !json.Valid(got) || bytes.Contains(got, []byte("12345678")) {
		t.Errorf("deep message: %s", got)
	}
}

// TestScrubberMatchesAnyCase: stderr too hides a secret whatever the
// case of its letters (review F5: K3Y-VALUE-1234 for k3y-value-1234),
// and holds back a beginning in any case.
func TestScrubberMatchesAnyCase(t *testing.T) {
	scrub := scrubber(declSecrets(config.Server{Command: "srv"}, map[string]string{"API_KEY": "k3y-value-1234"}))
	for in, want := range map[string]string{
		"key K3Y-VALUE-1234 refused": "key (hidden) refused",
		"key k3Y-vAlue-1234":         "key (hidden)",
		"k3y-value-123 is not it":    "k3y-value-123 is not it",
	} {
		if got := string(scrub.Scrub([]byte(in))); got != want {
			t.Errorf("Scrub(%q) = %q, want %q", in, got, want)
		}
	}
	if n := scrub.Partial([]byte("xx K3Y-VAL")); n != len("K3Y-VAL") {
		t.Errorf("Partial = %d", n)
	}
	// a password env named SSHPASS or *_PASS is one (review F5)
	scrub = scrubber(declSecrets(config.Server{Command: "sshpass"}, map[string]string{"SSHPASS": "swordfish99", "DB_PASS": "hunter2pw!"}))
	if scrub == nil {
		t.Fatal("SSHPASS and DB_PASS are not judged secret")
	}
	if got := string(scrub.Scrub([]byte("ssh: swordfish99 / HUNTER2PW!"))); got != "ssh: (hidden) / (hidden)" {
		t.Errorf("Scrub = %q", got)
	}
}

// TestRemoteScrubHidesWhatIsSent: for a remote server, the credentials
// in its headers and url (password, a query value, a token-shaped path
// segment) are hidden from its messages; an ordinary header value stays.
func TestRemoteScrubHidesWhatIsSent(t *testing.T) {
	d := config.Server{URL: "https://me:pw12345678@mcp.example.com/v1/sk_live_abcdefghijklmnop12345678/mcp?api_key=hunter2pwsecret&team=platform"}
	scrub, text := remoteScrub(d, map[string]string{"X-Team": "platform", "Authorization": "Bearer abc123secretvalue"}, nil)
	in := `{"id":1,"result":{"text":"got abc123secretvalue, pw12345678, hunter2pwsecret, sk_live_abcdefghijklmnop12345678 from platform"}}`
	want := `{"id":1,"result":{"text":"got (hidden), (hidden), (hidden), (hidden) from platform"}}`
	if got := string(scrub([]byte(in))); got != want {
		t.Errorf("scrub = %s\nwant %s", got, want)
	}
	if got := string(text([]byte("bad token ABC123SECRETVALUE"))); got != "bad token (hidden)" {
		t.Errorf("text scrub = %q", got)
	}
	if m, tx := remoteScrub(config.Server{URL: "https://mcp.example.com/mcp"}, map[string]string{"X-Team": "platform"}, nil); m != nil || tx != nil {
		t.Error("a remote server sent no credential gets a scrubber")
	}
}

// TestScrubMessageProperties: over messages made of the secret written
// every way an encoder writes it, in strings, keys, numbers and across
// values, and over every cut of them (not JSON): no panic; a valid
// message stays valid; no string of the answer holds the secret when
// decoded (nor does the text of one that is not JSON).
func TestScrubMessageProperties(t *testing.T) {
	const secret = `Pw/<1>&"x\y-99`
	ss := newScrubber([]string{secret, "4455667788"})
	pieces := append(jsonForms(secret), "4455667788", "plain", `\n`, `\\`, `\u0041`, "é", `\"`)
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		var b strings.Builder
		for n := rng.IntN(4); n >= 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	var value func(depth int) string
	value = func(depth int) string {
		switch k := rng.IntN(6); {
		case k == 0 && depth < 4:
			var m []string
			for n := rng.IntN(3); n >= 0; n-- {
				m = append(m, `"`+word()+`":`+value(depth+1))
			}
			return "{" + strings.Join(m, ",") + "}"
		case k == 1 && depth < 4:
			var a []string
			for n := rng.IntN(3); n >= 0; n-- {
				a = append(a, value(depth+1))
			}
			return "[ " + strings.Join(a, " , ") + " ]"
		case k == 2:
			return "4455667788"
		case k == 3:
			return "true"
		}
		return `"` + word() + `"`
	}
	lower := strings.ToLower(secret)
	for i := 0; i < 3000; i++ {
		msg := `{"jsonrpc":"2.0","id":` + fmt.Sprint(i) + `,"result":` + value(0) + `}`
		if !json.Valid([]byte(msg)) {
			continue // a piece such as \u0041 after a lone backslash
		}
		for _, in := range []string{msg, msg[:rng.IntN(len(msg))]} {
			out := ss.ScrubMessage([]byte(in))
			if !json.Valid(out) {
				if json.Valid([]byte(in)) {
					t.Fatalf("valid %s\nscrubbed to invalid %s", in, out)
				}
				if strings.Contains(strings.ToLower(string(out)), lower) {
					t.Fatalf("text %s\nkeeps the secret: %s", in, out)
				}
				continue
			}
			var v any
			json.Unmarshal(out, &v)
			for _, s := range allStrings(v, nil) {
				if strings.Contains(strings.ToLower(s), lower) || strings.Contains(s, "4455667788") {
					t.Fatalf("%s\nscrubbed to %s\nkeeps the secret in %q", in, out, s)
				}
			}
		}
	}
}

// allStrings is every string of a decoded JSON value, keys included.
func allStrings(v any, out []string) []string {
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []any:
		for _, e := range x {
			out = allStrings(e, out)
		}
	case map[string]any:
		for k, e := range x {
			out = append(allStrings(e, out), k)
		}
	}
	return out
}

// TestScrubMessageDeepLineKeepsTheStackSmall: a line nested a million
// levels deep (2 MiB; a server's line cap allows 64) is scrubbed on a
// goroutine whose stack may not pass 8 MiB: the walk keeps no frame per
// level. Past maxScrubDepth a container holding a secret is hidden whole,
// one holding none is kept byte for byte, and the message stays JSON.
// (A walk that recursed per level overflowed the stack: the runtime ends
// the whole process for that, every other server with it.)
func TestScrubMessageDeepLineKeepsTheStackSmall(t *testing.T) {
	const n = 1 << 20
	open, shut := strings.Repeat("[", n), strings.Repeat("]", n)
	objs, objsShut := strings.Repeat(`{"a":`, n), strings.Repeat("}", n)
	cut := func(open, shut string) string {
		return open[:len(open)/n*(maxScrubDepth-1)] + `"(hidden)"` + shut[:maxScrubDepth-1]
	}
	ss := newScrubber([]string{"hunter2hunter2", `x":1,"y`})
	defer debug.SetMaxStack(debug.SetMaxStack(8 << 20))
	for _, tc := range []struct{ in, want string }{
		{open + `"hunter2hunter2"` + shut, "[" + cut(open, shut) + "]"},
		{`{"id":1,"result":` + objs + `"HUNTER2hunter2"` + objsShut + `,"note":"kept"}`,
			`{"id":1,"result":` + cut(objs, objsShut) + `,"note":"kept"}`},
		// beside a value nested deeper than maxScrubDepth that holds
		// none (and less deep than JSON parsers take, so it is kept)
		{`{"id":1,"result":{"deep":` + open[:5000] + shut[:5000] + `,"t":"a hunter2hunter2"}}`,
			`{"id":1,"result":{"deep":` + open[:5000] + shut[:5000] + `,"t":"a (hidden)"}}`},
		// a match across members there
		{`{"id":1,"result":{"deep":` + open[:5000] + `1` + shut[:5000] + `,"r":{"x":1,"y":2}}}`,
			`{"id":1,"result":{"deep":` + open[:5000] + `1` + shut[:5000] + `,"r":"(hidden)"}}`},
	} {
		done := make(chan []byte)
		go func() { done <- ss.ScrubMessage([]byte(tc.in)) }()
		got := <-done
		if string(got) != tc.want {
			t.Errorf("ScrubMessage(%.80s…) = %.200s…", tc.in, got)
		}
	}
}

// TestScrubMessageDecodesEscapedStrings: a string whose text is the
// secret is scrubbed however its characters are escaped: any character
// as \uXXXX (Gson's \u003d for '=' and \u0027 for '\”, PHP's \u0022 for
// a quote, \u0009 for a tab), '/' escaped in one place and not another;
// and a secret percent-encoded as a url carries it. A message with such
// escapes and no secret is passed on as it is.
func TestScrubMessageDecodesEscapedStrings(t *testing.T) {
	for _, tc := range []struct{ secret, text string }{
		{"dXNlcjpodW50ZXIyaHVudGVyMg==", `auth dXNlcjpodW50ZXIyaHVudGVyMg\u003d\u003d`},
		{"it's-a-secret-99", `pw it\u0027s-a-secret-99`},
		{"hunter2hunter2", `\u0068unter2hunter2`},
		{"hunter2hunter2", `\u0048UNTER2hunter2`},
		{`pa"ss'word1`, `pa\u0022ss\u0027word1`},
		{`pa"ss'word1`, `pa\"ss\u0027word1`},
		{"tab\tx1234", `tab\u0009x1234`},
		{"a/b/c/d1234", `a\/b/c\/d1234`},
		{"ab+cd/ef=gh", `ab%2Bcd%2Fef%3Dgh`},
		{"ab+cd/ef=gh", `ab%2bcd%2fef%3dgh`},
	} {
		ss := newScrubber([]string{tc.secret})
		in := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + tc.text + `"}],"é":"\u00e9"}}`
		want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Replace(tc.text, strings.Fields(tc.text)[len(strings.Fields(tc.text))-1], Hidden, 1) + `"}],"é":"\u00e9"}}`
		if got := ss.ScrubMessage([]byte(in)); string(got) != want {
			t.Errorf("secret %q: ScrubMessage(%s)\n  = %s\nwant %s", tc.secret, in, got, want)
		}
	}
	ss := newScrubber([]string{"hunter2hunter2"})
	in := []byte(`{"id":1,"result":{"text":"caf\u00e9 \/ \u0068unter2 \n"}}`)
	if got := ss.ScrubMessage(in); &got[0] != &in[0] {
		t.Errorf("a message with escapes and no secret was copied: %s", got)
	}
}

// TestScrubMessageKeepsABackslashSecretToItsText: a secret ending in a
// backslash is matched as a string writes it ("\\"), never on the
// backslash that begins the next escape, which left the message broken
// ("(hidden)"" for the text abcd1234") or hid text that is not the
// secret (abcd1234 and a line feed).
func TestScrubMessageKeepsABackslashSecretToItsText(t *testing.T) {
	ss := newScrubber([]string{`abcd1234\`})
	for in, want := range map[string]string{
		`{"id":1,"result":{"t":"abcd1234\""}}`:     `{"id":1,"result":{"t":"abcd1234\""}}`,
		`{"id":1,"result":{"t":"abcd1234\n"}}`:     `{"id":1,"result":{"t":"abcd1234\n"}}`,
		`{"id":1,"result":{"t":"abcd1234\\"}}`:     `{"id":1,"result":{"t":"(hidden)"}}`,
		`{"id":1,"result":{"t":"ABCD1234\\ x"}}`:   `{"id":1,"result":{"t":"(hidden) x"}}`,
		`{"id":1,"result":{"t":"abcd1234\u005c"}}`: `{"id":1,"result":{"t":"(hidden)"}}`,
	} {
		got := ss.ScrubMessage([]byte(in))
		if string(got) != want {
			t.Errorf("ScrubMessage(%s)\n  = %s\nwant %s", in, got, want)
		}
		if !json.Valid(got) {
			t.Errorf("ScrubMessage(%s) = %s: not JSON", in, got)
		}
	}
	// outside JSON, as given
	if got := string(ss.ScrubMessage([]byte(`boot: abcd1234\ loaded`))); got != "boot: (hidden) loaded" {
		t.Errorf("text line: %s", got)
	}
}

// TestDecodeEscapesAgreesWithEncodingJSON: the whole-message decode the
// fast check searches gives each string's text as encoding/json reads
// it, surrogate pairs and lone surrogates included.
func TestDecodeEscapesAgreesWithEncodingJSON(t *testing.T) {
	units := []string{"a", "Z", "9", " ", "é", "€", `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`,
		`\u0068`, `\u00E9`, `\u003c`, `\uD83D\uDE00`, `\ud83d`, `\ude00`, `\uD83Dx`, `\uD83D\u0041`, `\u005c`, `\u0022`}
	rng := rand.New(rand.NewPCG(7, 18))
	for n := 0; n < 20000; n++ {
		var body strings.Builder
		for k := rng.IntN(12); k >= 0; k-- {
			body.WriteString(units[rng.IntN(len(units))])
		}
		var want string
		if err := json.Unmarshal([]byte(`"`+body.String()+`"`), &want); err != nil {
			t.Fatalf("%s: %v", body.String(), err)
		}
		if got := decodeEscapes(nil, []byte(body.String())); string(got) != want {
			t.Fatalf("decodeEscapes(%s) = %q, encoding/json reads %q", body.String(), got, want)
		}
	}
	// malformed escapes are copied, not dropped
	for _, in := range []string{`\u12`, `\uXYZW`, `\q`, `tail\`} {
		if got := decodeEscapes(nil, []byte(in)); string(got) != in {
			t.Errorf("decodeEscapes(%s) = %s", in, got)
		}
	}
}

// TestScrubMessagePassesAnEscapingEncodersMessageWithoutTheWalk: a
// server whose encoder escapes every '/' and non-ASCII letter (PHP's
// json_encode) pays no walk and no allocation for a message without a
// secret; the walk decoded each such string with encoding/json (70
// allocations for this 2 KB message).
func TestScrubMessagePassesAnEscapingEncodersMessageWithoutTheWalk(t *testing.T) {
	ss := newScrubber([]string{"tok-Value-2026-abcdef"})
	var texts []string
	for i := 0; i < 10; i++ {
		texts = append(texts, fmt.Sprintf(`{"type":"text","text":"caf\u00e9 at https:\/\/example.com\/a\/b\/%d \u2014 done"}`, i))
	}
	msg := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[` + strings.Join(texts, ",") + `]}}`)
	if got := ss.ScrubMessage(msg); &got[0] != &msg[0] {
		t.Fatalf("a message without a secret was copied: %s", got)
	}
	if n := testing.AllocsPerRun(200, func() { ss.ScrubMessage(msg) }); n >= 1 {
		t.Errorf("%v allocations a message without a secret, want none", n)
	}
	// the same message holding the secret behind escapes is still scrubbed
	dirty := bytes.Replace(msg, []byte(`done`), []byte(`\u0074ok-Value-2026-abcdef`), 1)
	if got := ss.ScrubMessage(dirty); bytes.Contains(bytes.ToLower(got), []byte("value-2026")) || !json.Valid(got) {
		t.Errorf("escaped secret kept: %s", got)
	}
}

// TestScrubMessageHidesAnEscapedSecretPastTheDepthBound: past
// maxScrubDepth a container is skipped as one value and hidden when a
// secret is in it, also one written only with \u escapes.
func TestScrubMessageHidesAnEscapedSecretPastTheDepthBound(t *testing.T) {
	ss := newScrubber([]string{"hunter2hunter2", "it's-a-secret"})
	for _, text := range []string{`\u0068unter2hunter2`, `it\u0027s-a-secret`} {
		for _, depth := range []int{10, 70} {
			msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"v":` + strings.Repeat("[", depth) + `"` + text + `"` + strings.Repeat("]", depth) + `,"k":"kept"}}`)
			got := ss.ScrubMessage(msg)
			var s any
			if err := json.Unmarshal(got, &s); err != nil {
				t.Fatalf("depth %d: %s: %v", depth, got, err)
			}
			if b, _ := json.Marshal(s); bytes.Contains(bytes.ToLower(b), []byte("secret")) || bytes.Contains(b, []byte("unter2")) || !bytes.Contains(got, []byte(`"kept"`)) {
				t.Errorf("depth %d: %s", depth, got)
			}
		}
	}
}

// TestScrubMessageWithholdsAsValidJSONRPC: a secret running across a
// message's own members withholds it as valid JSON-RPC: an answer to our
// request becomes an error to its id; a notification, or a request of
// the server's (whose id is not one of ours), becomes a log notification,
// never an answer to an id of ours and never a line a client that fails
// on stdout noise would end the server for.
func TestScrubMessageWithholdsAsValidJSONRPC(t *testing.T) {
	ss := newScrubber([]string{`sec1","y":"sec2`})
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":5,"result":{},"x":"sec1","y":"sec2"}`, `"id":5,"error"`},
		{`{"jsonrpc":"2.0","method":"notifications/message","x":"sec1","y":"sec2"}`, withheldNote},
		{`{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","x":"sec1","y":"sec2"}`, withheldNote},
		{`{"jsonrpc":"2.0","id":{"a":1},"x":"sec1","y":"sec2"}`, withheldNote},
	} {
		got := ss.ScrubMessage([]byte(tc.in))
		if !json.Valid(got) || !strings.Contains(string(got), tc.want) || strings.Contains(string(got), "sec2") {
			t.Errorf("ScrubMessage(%s) = %s, want it to hold %s", tc.in, got, tc.want)
		}
	}
}

// TestScrubberSkipsAWhiteSpaceSecret: a credential of white space only
// is no text to hide, and hiding it broke the JSON between tokens.
func TestScrubberSkipsAWhiteSpaceSecret(t *testing.T) {
	if ss := newScrubber([]string{"\t\t\t\t", "    "}); ss != nil {
		t.Fatalf("a scrubber for white space: %+v", ss)
	}
	ss := newScrubber([]string{"\t\t\t\t", "hunter2hunter2"})
	in := "{\"id\":1,\t\t\t\t\"result\":{\"n\":0\t\t\t\t}}"
	if got := ss.ScrubMessage([]byte(in)); string(got) != in {
		t.Errorf("ScrubMessage(%q) = %q", in, got)
	}
}
