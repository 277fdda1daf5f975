package gateway

import "testing"

// TestDashboardBase: the printed dashboard URL of a wildcard bind is a
// loopback one, which the dashboard's gate admits.
func TestDashboardBase(t *testing.T) {
	for addr, want := range map[string]string{
		"0.0.0.0:8765":   "http://127.0.0.1:8765",
		"[::]:8765":      "http://[::1]:8765",
		"127.0.0.1:8765": "http://127.0.0.1:8765",
		"[::1]:9":        "http://[::1]:9",
		"10.0.0.5:80":    "http://10.0.0.5:80",
	} {
		if got := dashboardBase(addr); got != want {
			t.Errorf("dashboardBase(%q) = %q, want %q", addr, got, want)
		}
	}
}
