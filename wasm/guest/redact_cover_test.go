package guest

import (
	"encoding/json"
	"strings"
	"testing"
)

// Coverage tests: where a secret may sit in a result and which secrets
// are found, asserted on what a client decodes.

const testAWSKey = "AKIAIOSFODNN7EXAMPLE"

// decodedStrings returns every string of a JSON text, member names
// included, as a client decodes them.
func decodedStrings(t *testing.T, b []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON (%v): %s", err, b)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

func redactOrSame(t *testing.T, r *Redactor, in []byte) []byte {
	t.Helper()
	out, changed, err := r.RedactResult(in)
	if err != nil {
		t.Fatalf("RedactResult(%s): %v", in, err)
	}
	if !changed {
		return in
	}
	return out
}

func TestRedactEveryString(t *testing.T) {
	k := testAWSKey
	cases := map[string]string{
		"text":                  `{"content":[{"type":"text","text":"key ` + k + `"}]}`,
		"escaped member name":   `{"content":[{"type":"text","t\u0065xt":"key ` + k + `"}],"cont\u0065nt":[{"type":"text","text":"` + k + `"}]}`,
		"escaped secret":        `{"content":[{"type":"text","text":"key \u0041KIAIOSFODNN7EXAMPLE"}]}`,
		"resource uri and text": `{"content":[{"type":"resource","resource":{"uri":"file:///` + k + `","mimeType":"text/` + k + `","text":"` + k + `"}}]}`,
		"resource blob name":    `{"content":[{"type":"resource","resource":{"uri":"x://y","blob":"aGk=","name":"` + k + `"}}]}`,
		"resource_link":         `{"content":[{"type":"resource_link","uri":"https://h/` + k + `","name":"` + k + `","title":"` + k + `","description":"see ` + k + `"}]}`,
		"annotations":           `{"content":[{"type":"text","text":"ok","annotations":{"audience":["` + k + `"],"note":"` + k + `"}}]}`,
		"image data":            `{"content":[{"type":"image","data":"` + k + `","mimeType":"image/png"}]}`,
		"structuredContent":     `{"content":[],"structuredContent":{"` + k + `":{"deep":["` + k + `",{"x":"` + k + `"}]}}}`,
		"_meta":                 `{"content":[],"_meta":{"` + k + `":"v","trace":"` + k + `"}}`,
		"no content":            `{"structuredContent":{"token":"` + k + `"}}`,
		"unknown member":        `{"content":[],"extra":{"` + k + `":["` + k + `"]}}`,
	}
	r, err := NewRedactor(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			out := redactOrSame(t, r, []byte(in))
			found := false
			for _, s := range decodedStrings(t, out) {
				if strings.Contains(s, k) {
					t.Fatalf("the key survives in %q of %s", s, out)
				}
				found = found || strings.Contains(s, "[REDACTED:aws-access-key-id]")
			}
			if !found {
				t.Fatalf("no mask in %s", out)
			}
		})
	}
}

func TestRedactDetectors(t *testing.T) {
	for _, tc := range []struct {
		rule, text, secret string
	}{
		{"google-api-key", "key=AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI;", "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"},
		{"stripe-key", "STRIPE sk_live_4eC39HqLyjWDarjtT1zdp7dc ok", "4eC39HqLyjWDarjtT1zdp7dc"},
		{"stripe-key", "rk_test_51H8xYzAbCdEfGhIjKlMn", "51H8xYzAbCdEfGhIjKlMn"},
		{"slack-webhook", "post to https://hooks.slack.com/services/T0ABCDEF/B0ABCDEF/abcdefghijklmnopqrstuvwx now", "T0ABCDEF/B0ABCDEF/abcdefghijklmnopqrstuvwx"},
		{"jwt", "Cookie: session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
		{"password-pair", "db password=hunter2hunter2 and more", "hunter2hunter2"},
		{"password-pair", `{"passwd": "correct-horse"}`, "correct-horse"},
		{"password-pair", "API_KEY: 9f8e7d6c5b4a", "9f8e7d6c5b4a"},
		{"password-pair", "https://x.test/cb?token=abc123def456&x=1", "abc123def456"},
		{"url-credentials", "DATABASE_URL=postgres://app:s3cretPassw0rd@db.internal:5432/app", "s3cretPassw0rd"},
		{"url-credentials", "redis://:onlyapassword@cache:6379/0", "onlyapassword"},
		{"github-token", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
		{"private-key", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----", "MHcCAQEEIB"},
	} {
		r, _ := NewRedactor(nil)
		got, changed := r.RedactText([]byte(tc.text))
		if !changed || strings.Contains(string(got), tc.secret) || !strings.Contains(string(got), "[REDACTED:"+tc.rule+"]") {
			t.Errorf("%s: RedactText(%q) = %q, %v; want the secret masked by %s", tc.rule, tc.text, got, changed, tc.rule)
		}
	}
	// Near misses stay.
	for _, text := range []string{
		"max_tokens=1024", "tokens: 500", "the password is long", "https://example.com:443/path@x",
		"pk_live_abcdefghijklmnopqrstuvwx", "eyJnotajwt", "hooks.slack.com/other/abcdefghijk",
	} {
		r, _ := NewRedactor(nil)
		if got, changed := r.RedactText([]byte(text)); changed {
			t.Errorf("RedactText(%q) = %q: a near miss was masked", text, got)
		}
	}
}

// TestRedactSplitAcrossItems: a secret cut between adjacent text items is
// masked on both sides of the cut.
func TestRedactSplitAcrossItems(t *testing.T) {
	item := func(s string) string {
		j, _ := json.Marshal(s)
		return `{"type":"text","text":` + string(j) + `}`
	}
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nsecretbodyline2\n-----END RSA PRIVATE KEY-----"
	for _, tc := range []struct {
		name   string
		items  []string
		leaked []string
	}{
		{"aws key in two", []string{"id AKIAIOSF", "ODNN7EXAMPLE done"}, []string{"AKIAIOSF", "ODNN7EXAMPLE"}},
		{"aws key in three", []string{"id AKIA", "IOSFODNN", "7EXAMPLE done"}, []string{"IOSFODNN", "7EXAMPLE"}},
		{"anchor cut", []string{"gh", "p_abcdefghijklmnopqrstuvwxyz0123456789"}, []string{"abcdefghijklmnop"}},
		{"github token in two", []string{strings.Repeat("x", 2000) + " ghp_abcdefghijklmno", "pqrstuvwxyz0123456789 tail"}, []string{"abcdefghijklmno", "pqrstuvwxyz0123456789"}},
		{"private key in three", []string{"log\n" + pem[:40], pem[40:55], pem[55:] + "\nafter"}, []string{"MIIEowIBAAKCAQEA7bq", "secretbodyline2"}},
		{"escaped", []string{"id AKIA\u0049OSF", "ODNN7EXAMPLE\n"}, []string{"ODNN7EXAMPLE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := `{"content":[` + strings.Join(func() []string {
				var s []string
				for _, it := range tc.items {
					s = append(s, item(it))
				}
				return s
			}(), ",") + `]}`
			r, _ := NewRedactor(nil)
			out := redactOrSame(t, r, []byte(in))
			all := strings.Join(decodedStrings(t, out), "|")
			for _, l := range tc.leaked {
				if strings.Contains(all, l) {
					t.Errorf("%q survives: %s", l, out)
				}
			}
			if !strings.Contains(all, "[REDACTED:") {
				t.Errorf("no mask: %s", out)
			}
		})
	}
	// Items that are not adjacent text items are not joined.
	r, _ := NewRedactor(nil)
	in := `{"content":[` + item("id AKIAIOSF") + `,{"type":"image","data":"eA==","mimeType":"image/png"},` + item("ODNN7EXAMPLE") + `]}`
	if out, changed, _ := r.RedactResult([]byte(in)); changed {
		t.Errorf("items around an image were joined: %s", out)
	}
}
