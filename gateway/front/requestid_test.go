package front

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRequestIDOf(t *testing.T) {
	gen := func(id string) bool { return len(id) == 24 && validRequestID(id) }
	for _, tc := range []struct {
		hdr  http.Header
		want string // "" = a generated id
	}{
		{http.Header{"X-Request-Id": {"abc-DEF_123"}}, "abc-DEF_123"},
		{http.Header{"X-Correlation-Id": {"corr"}}, "corr"},
		{http.Header{"X-Request-Id": {"bad id"}, "X-Correlation-Id": {"good"}}, "good"},
		{http.Header{"X-Request-Id": {strings.Repeat("x", 64)}}, strings.Repeat("x", 64)},
		{http.Header{"X-Request-Id": {strings.Repeat("x", 65)}}, ""},
		{http.Header{"X-Request-Id": {"a", "b"}}, ""}, // two values: neither is the id
		{http.Header{"X-Request-Id": {"new\nline"}}, ""},
		{http.Header{"X-Request-Id": {""}}, ""},
		{http.Header{}, ""},
	} {
		got := requestIDOf(tc.hdr)
		if tc.want == "" && !gen(got) || tc.want != "" && got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.hdr, got, tc.want)
		}
	}
	if a, b := requestIDOf(nil), requestIDOf(nil); a == b {
		t.Errorf("generated ids repeat: %s", a)
	}
}

func TestTagRequestIDLeavesOneSanitizedHeader(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	r.Header.Set("X-Request-ID", "bad\x7f")
	r.Header.Set("X-Correlation-ID", "ok_1")
	w := httptest.NewRecorder()
	id := tagRequestID(w, r)
	if id != "ok_1" || r.Header.Get(RequestIDHeader) != "ok_1" || r.Header.Get(CorrelationIDHeader) != "" || w.Header().Get(RequestIDHeader) != "ok_1" {
		t.Fatalf("id %q, request %v, response %v", id, r.Header, w.Header())
	}
}
