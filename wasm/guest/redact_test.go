package guest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// Differential tests: Redactor (candidates + windows) against refRedactor
// (every rule over the whole text), which must agree byte for byte.

// redactConfigs are the configs both implementations are compared under.
var redactConfigs = []string{
	``,
	`{"disable":["bearer-token"],"patterns":["sk-[a-z]{8}"]}`,
	`{"disable":["private-key","aws-access-key-id","github-token"]}`,
	`{"patterns":["(?i)password\\s*=\\s*\\S+","AKIA"]}`,
}

// redactCorpus: each rule's secrets, near-misses and the edges the windows
// must get right (word boundaries, runs longer than a window, case folding
// with ſ and K, masks that create or destroy later matches).
func redactCorpus() []string {
	key40 := "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	c := []string{
		"",
		"nothing here",
		"key AKIAIOSFODNN7EXAMPLE end",
		"xAKIAIOSFODNN7EXAMPLE",
		"AKIAIOSFODNN7EXAMPLEX",
		"AKIAIOSFODNN7EXAMPL",
		"AKIAIOSFODNN7EXAMPLE-ASIAIOSFODNN7EXAMPLE",
		"_ASIAIOSFODNN7EXAMPLE",
		"éAROAIOSFODNN7EXAMPLEé",
		"aws_secret_access_key = " + key40,
		"AWS_SECRET_ACCESS_KEY=" + key40 + "x",
		"aws_secret_access_key = " + key40 + "/",
		"secret_access_key:\"" + key40 + "\"",
		"secretaccesskey '" + key40,
		"ſecret_acceſſ_Key = " + key40,
		"awſ something secret ==" + key40,
		"aws private \t\n" + key40,
		"aws " + strings.Repeat("é", 20) + "secret" + strings.Repeat("€", 20) + ": " + key40,
		"aws " + strings.Repeat("x", 21) + "secret: " + key40,
		"secret:" + strings.Repeat(" ", 500) + key40,
		"secret=" + strings.Repeat("=", 60),
		"secret = " + strings.Repeat("K", 40),
		"secret = " + strings.Repeat("ſ", 40) + " and aws secret " + strings.Repeat("a", 45),
		"aws aws aws secret secret: " + key40 + " secret: " + key40,
		"ghp_" + strings.Repeat("a1B2", 9),
		"xghp_" + strings.Repeat("a1B2", 9),
		"ghp_" + strings.Repeat("a", 255),
		"ghp_" + strings.Repeat("a", 256),
		"ghp_" + strings.Repeat("a", 35),
		"gho_" + strings.Repeat("Z", 40) + "-ghs_" + strings.Repeat("9", 40) + " ghr_" + strings.Repeat("q", 36) + "é",
		"github_pat_" + strings.Repeat("x_", 15),
		"github_pat_" + strings.Repeat("y", 300),
		"github_pat_" + strings.Repeat("y", 255) + "é",
		"glpat-" + strings.Repeat("Z", 20),
		"glpat-" + strings.Repeat("Z-_", 2000),
		"glpat-" + strings.Repeat("Z", 19),
		"aglpat-" + strings.Repeat("Z", 20),
		"xoxb-1234567890-abcdefghij",
		"xoxz-1234567890-abcdefghij",
		"xoxp-" + strings.Repeat("a-", 3000) + "!",
		"Authorization: Bearer abcdef0123456789.xyz",
		"BEARER\t\n  abcdefgh==== tail",
		"bearer abcdefg",
		"Xbearer abcdefghijkl",
		"bearer " + strings.Repeat("ſK", 10) + "==",
		"bearer\u00a0abcdefghijkl",
		"bearer" + strings.Repeat(" ", 3000) + strings.Repeat("t", 3000) + "=",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nafter",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n",
		"-----BEGIN PRIVATE KEY-----abc\ndef",
		"-----BEGIN PRIVATE KEY-----END PRIVATE KEY-----\nline2\n-----END PRIVATE KEY-----",
		"-----BEGIN PUBLIC KEY-----\nabc\n-----END PUBLIC KEY-----",
		"-----BEGIN X PRIVATE KEY----- a\n-----BEGIN Y PRIVATE KEY----- b\n-----END Z PRIVATE KEY-----c\n-----END PRIVATE KEY-----",
		"-----BEGIN PRIVATE KEY-----\n-----END nope-----\n-----END  PRIVATE KEY-----tail",
		"------BEGIN PRIVATE KEY-----x",
		"-----BEGIN A PRIVATE KEY-----\n" + strings.Repeat("-----BEGIN B PRIVATE KEY-----\n", 50),
		"-----BEGIN PRIVATE KEY----- AKIAIOSFODNN7EXAMPLE\n AKIAIOSFODNN7EXAMPLE",
		"x-----BEGIN PRIVATE KEY-----ghp_" + strings.Repeat("a", 40),
		"use sk-abcdefgh now; password = hunter2",
		"ghp_" + strings.Repeat("a", 36) + "AKIAIOSFODNN7EXAMPLE",
		"Bearer ghp_" + strings.Repeat("a", 36),
		"aws secret: Bearer " + strings.Repeat("b", 40),
		"[REDACTED:aws-access-key-id] secret: " + key40,
		"\xff\xfeAKIAIOSFODNN7EXAMPLE\xc5",
		"secret\xc5",
		"bearer \xe2\x84",
		"key AIzaSyA-" + strings.Repeat("b", 31) + " end",
		"AIza" + strings.Repeat("c", 34),
		"xAIza" + strings.Repeat("c", 40),
		"sk_live_" + strings.Repeat("4eC39HqLyjWDarjtT1zdp7dc", 1) + " rk_test_" + strings.Repeat("Z", 16) + " sk_live_short",
		"pk_live_" + strings.Repeat("a", 30),
		"https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
		"hooks.slack.com/workflows/abc hooks.slack.com/triggers/" + strings.Repeat("q", 9) + " hooks.slack.com/other/aaaaaaaaaa",
		"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4eHh4eHgifQ.",
		"eyJshort.eyJshort.x",
		"postgres://admin:s3cr3t!@db.internal:5432/app",
		"redis://:onlypass@cache:6379 https://example.com:443/x http://user@host/ ftp://a:b:c@h",
		"password=hunter22 passwd: 'opensesame' PassPhrase = \"correct horse\" secret:abcdef token=xyz",
		"api_key=ABCDEF123456 apikey: 0123456789 API-KEY = zzzzzzzzzz mytoken=abcdefgh max_tokens=1024 token_count: 5",
		"{\"password\": \"p@ssw0rd!\", \"token\": null}",
		"xpassword=abcdefgh", "_password=abcdefgh", "tokenizer=abcdefgh",
	}
	return c
}

func TestRedactMatchesReference(t *testing.T) {
	for _, cfg := range redactConfigs {
		fast, err := NewRedactor([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := newRefRedactor([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		corpus := redactCorpus()
		// Every pair, joined by a separator that is and one that is not a
		// word character, so rules interact across positions.
		base := len(corpus)
		for i := 0; i < base; i++ {
			if raceEnabled && i%5 != 0 {
				continue
			}
			for _, sep := range []string{" ", "x", "\n", "="} {
				corpus = append(corpus, corpus[i]+sep+corpus[(i*7+3)%base])
			}
		}
		for _, in := range corpus {
			want, wch := ref.redactText([]byte(in))
			got, gch := fast.RedactText([]byte(in))
			if !bytes.Equal(got, want) || gch != wch {
				t.Errorf("config %s, RedactText(%q):\n got %q, %v\nwant %q, %v", cfg, in, got, gch, want, wch)
			}
			compareResults(t, fast, ref, cfg, resultWith(in))
		}
	}
}

// resultWith puts text in every place redaction looks and in places it
// must not touch.
func resultWith(text string) []byte {
	j, _ := json.Marshal(text)
	s := string(j)
	return []byte(`{"content":[{"type":"text","text":` + s + `},{"type":"resource","resource":{"uri":` + s + `,"text":` + s + `}},{"type":"image","data":` + s + `}],` +
		`"structuredContent":{"a":` + s + `,"n":[1.50,{"deep":[` + s + `,true,null]}],` + s + `:"k"}, "isError" : false, "_meta":{"m":` + s + `}}`)
}

func compareResults(t *testing.T, fast *Redactor, ref *refRedactor, cfg string, in []byte) {
	t.Helper()
	want, wch, werr := ref.redactResult(in)
	fast.noJoin = true
	defer func() { fast.noJoin = false }()
	// Once as natively, once with values skipped by a stand-in for the
	// host's input_json_skip (what the guest does).
	for _, skip := range []func(int) (int, error){nil, func(i int) (int, error) { return hostSkip(in, i) }} {
		fast.Skip = skip
		got, gch, gerr := fast.RedactResult(in)
		fast.Skip = nil
		if werr != nil {
			// Malformed input: the reference decodes every string and
			// fails; the fast one only decodes where it looks, and may
			// return it unchanged or changed but still malformed: the
			// host refuses such output, so the call fails either way.
			if gerr == nil && gch && json.Valid(got) {
				t.Fatalf("config %s, RedactResult(%q): reference failed (%v), fast made it valid JSON: %q", cfg, in, werr, got)
			}
			continue
		}
		if gerr != nil || gch != wch || gch && canonJSON(t, got) != canonJSON(t, want) {
			t.Fatalf("config %s, host skip %v, RedactResult(%q):\n got %q, %v, %v\nwant %q, %v, %v", cfg, skip != nil, in, got, gch, gerr, want, wch, werr)
		}
	}
}

// canonJSON is the token stream of a JSON text, strings decoded: what a
// client reads, whatever the escapes.
func canonJSON(t *testing.T, b []byte) string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var sb strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return sb.String()
			}
			t.Fatalf("output is not JSON (%v): %q", err, b)
		}
		fmt.Fprintf(&sb, "%T:%q ", tok, fmt.Sprint(tok))
	}
}

// hostSkip stands in for the host's input_json_skip: strings by quote
// search, other values by SkipValue.
func hostSkip(b []byte, i int) (int, error) {
	i = SkipSpace(b, i)
	if i < len(b) && b[i] == '"' {
		return hostSkipString(b, i)
	}
	return SkipValue(b, i)
}

// hostSkipString does what the host's input_json_skip does for a string:
// the first quote not escaped by an odd run of backslashes, found with
// IndexByte.
func hostSkipString(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, ErrSyntax
	}
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, ErrSyntax
		}
		j += k
		n := 0
		for m := j - 1; m > i && b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, nil
		}
		j++
	}
}

// TestRedactRandom: random texts built from fragments of secrets, anchors
// and noise, under every config.
func TestRedactRandom(t *testing.T) {
	frags := append(redactCorpus(), "A", "AKIA", "gh", "ghp_", "_", "-", "-----", "BEGIN ", "END ", "PRIVATE KEY-----",
		"aws", "secret", "Secret", "ſ", "K", " ", "\n", "=", ":", "\"", "bearer ", "Bearer", "xox", "b-", "é",
		strings.Repeat("a", 40), strings.Repeat("Z9", 12), "glpat-", "github_pat_", "\\", "\x00")
	rng := rand.New(rand.NewPCG(1, 2))
	n := 400
	if testing.Short() || raceEnabled {
		n = 40
	}
	for _, cfg := range redactConfigs {
		fast, _ := NewRedactor([]byte(cfg))
		ref, _ := newRefRedactor([]byte(cfg))
		for i := 0; i < n; i++ {
			var sb strings.Builder
			for k := rng.IntN(12); k >= 0; k-- {
				sb.WriteString(frags[rng.IntN(len(frags))])
			}
			in := sb.String()
			want, _ := ref.redactText([]byte(in))
			got, _ := fast.RedactText([]byte(in))
			if !bytes.Equal(got, want) {
				t.Fatalf("config %s, RedactText(%q):\n got %q\nwant %q", cfg, in, got, want)
			}
			compareResults(t, fast, ref, cfg, resultWith(in))
		}
	}
}

// TestRedactResultMalformed: both implementations agree on inputs that are
// not results, or are results with odd JSON.
func TestRedactResultMalformed(t *testing.T) {
	fast, _ := NewRedactor(nil)
	ref, _ := newRefRedactor(nil)
	for _, in := range []string{
		``, `[]`, `{`, `{"content":`, `{"content":[{"text":"\x"}]}`, `{"content":[{"text":"AKIAIOSFODNN7EXAMPLE"},]}`,
		`{"structuredContent":{"a":"\q AKIAIOSFODNN7EXAMPLE"}}`, `{"structuredContent":"AKIAIOSFODNN7EXAMPLE"}`,
		`{"content":"AKIAIOSFODNN7EXAMPLE","content":[1,"AKIAIOSFODNN7EXAMPLE",{"text":"AKIAIOSFODNN7EXAMPLE"}]}`,
		`{"structuredContent":` + strings.Repeat(`[`, 600) + `"AKIAIOSFODNN7EXAMPLE"` + strings.Repeat(`]`, 600) + `}`,
		`{"structuredContent":` + strings.Repeat(`{"a":`, 400) + `"AKIAIOSFODNN7EXAMPLE"` + strings.Repeat(`}`, 400) + `}`,
		`{"content":[{"type":"resource","resource":` + strings.Repeat(`{"resource":`, 300) + `{"text":"AKIAIOSFODNN7EXAMPLE"}` + strings.Repeat(`}`, 300) + `}]}`,
		` { "content" : [ { "text" : "AKIAIOSFODNN7EXAMPLE" } , 7 ] , "x" : [ 1 , 2 ] } trailing`,
	} {
		compareResults(t, fast, ref, "", []byte(in))
	}
}

func FuzzRedactMatchesReference(f *testing.F) {
	for i, s := range redactCorpus() {
		f.Add(s, uint8(i))
	}
	var fast []*Redactor
	var ref []*refRedactor
	for _, cfg := range redactConfigs {
		a, _ := NewRedactor([]byte(cfg))
		b, _ := newRefRedactor([]byte(cfg))
		fast, ref = append(fast, a), append(ref, b)
	}
	f.Fuzz(func(t *testing.T, in string, which uint8) {
		k := int(which) % len(fast)
		want, wch := ref[k].redactText([]byte(in))
		got, gch := fast[k].RedactText([]byte(in))
		if !bytes.Equal(got, want) || gch != wch {
			t.Fatalf("config %s, RedactText(%q):\n got %q, %v\nwant %q, %v", redactConfigs[k], in, got, gch, want, wch)
		}
		compareResults(t, fast[k], ref[k], redactConfigs[k], resultWith(in))
		compareResults(t, fast[k], ref[k], redactConfigs[k], []byte(in))
	})
}

// TestAppendQuoteUTF8: the inline UTF-8 fast paths agree with
// utf8.DecodeRune on every two- and three-byte prefix.
func TestAppendQuoteUTF8(t *testing.T) {
	slow := func(s []byte) []byte { // the plain per-rune form
		dst := []byte{'"'}
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRune(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				dst = append(dst, "\ufffd"...)
			case r == '"' || r == '\\':
				dst = append(dst, '\\', byte(r))
			case r < 0x20:
				b, _ := json.Marshal(string(rune(r)))
				dst = append(dst, b[1:len(b)-1]...)
			default:
				dst = append(dst, s[i:i+size]...)
			}
			i += size
		}
		return append(dst, '"')
	}
	for a := 0x80; a < 0x100; a++ {
		for b := 0x70; b < 0x100; b += 3 {
			for _, c := range []byte{'x', 0x80, 0xbf, 0xc0} {
				in := []byte{'a', byte(a), byte(b), c, '"'}
				if got, want := AppendQuote(nil, in), slow(in); !bytes.Equal(got, want) {
					t.Fatalf("AppendQuote(%q) = %q, want %q", in, got, want)
				}
			}
		}
	}
}

// TestExactEq: exactEq flags exactly the equal bytes, whatever the others.
func TestExactEq(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 20000; n++ {
		var w [8]byte
		for i := range w {
			w[i] = byte(rng.IntN(256))
			if rng.IntN(3) == 0 {
				w[i] = '\\'
			}
		}
		x := load64(w[:], 0)
		m := exactEq(x, '\\')
		for i, c := range w {
			if (m>>(8*i+7))&1 == 1 != (c == '\\') {
				t.Fatalf("exactEq(%x) = %x", w, m)
			}
		}
	}
}

// TestRuleMatchersAgreeWithRegexps: the hand-written matchers give what
// the rule's anchored regexp gives on its window, at every anchor of
// random texts.
func TestRuleMatchersAgreeWithRegexps(t *testing.T) {
	frags := append(redactCorpus(), "A", "AKIA", "ghp_", "github_pat_", "glpat-", "xoxb-", "bearer", "Bearer \t", "_", "-", "=", " ", "ſ", "K", "é",
		strings.Repeat("a", 20), strings.Repeat("Z9", 9), strings.Repeat("x", 250), "\xe2\x84", "\xc5")
	redactTables()
	if builtinRules[privateKeyRule].name != "private-key" || builtinRules[awsSecretRule].name != "aws-secret-access-key" {
		t.Fatal("privateKeyRule / awsSecretRule do not index their rules")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 4000; n++ {
		var sb strings.Builder
		for k := rng.IntN(6); k >= 0; k-- {
			sb.WriteString(frags[rng.IntN(len(frags))])
		}
		s := []byte(sb.String())
		for i, b := range builtinRules {
			if b.match == nil {
				continue
			}
			re := regexp.MustCompile(`\A(?:` + b.expr + `)`)
			for p := range s {
				if startRules[s[p]]&(1<<i) == 0 || !b.at(s, p) {
					continue
				}
				got := b.match(&Redactor{}, s, p)
				want := re.FindSubmatchIndex(s[p:])
				for k := range want {
					if want[k] >= 0 {
						want[k] += p
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s at %d of %q: matcher %v, regexp %v", b.name, p, s, got, want)
				}
			}
		}
	}
}
