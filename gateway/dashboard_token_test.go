package gateway

import (
	"strings"
	"testing"

	"sluice/gateway/admin"
)

// TestDashboardMakesItsToken: without an operator's token the dashboard
// gets one made for the process, its login link carries it in the
// fragment, and the text an agent is given about approvals names the
// dashboard without it. With an operator's token nothing is made and no
// link is offered (the operator has the token).
func TestDashboardMakesItsToken(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	g := w.open()
	d, err := newDashboard(g, &DashboardOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.approvals.Close()
	if len(d.madeToken) != 64 {
		t.Fatalf("made token %q", d.madeToken)
	}
	base := "http://127.0.0.1:8765"
	if got := d.loginURL(base); got != base+"/admin/login#token="+d.madeToken {
		t.Fatalf("login link %q", got)
	}
	d.approvals.SetURL(base)
	for _, text := range []string{d.approvals.URL(), d.approvals.WaitText(admin.ErrApprovalTimeout), d.approvals.WaitText(nil)} {
		if !strings.Contains(text, base+"/admin/activity") || strings.Contains(text, d.madeToken) || strings.Contains(text, "token=") {
			t.Errorf("an agent's text %q: want the dashboard's address and no token", text)
		}
	}

	g2 := w.open()
	d2, err := newDashboard(g2, &DashboardOptions{Token: "operator-token"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.approvals.Close()
	if d2.madeToken != "" || d2.loginURL(base) != "" {
		t.Fatalf("with an operator's token: made %q, link %q", d2.madeToken, d2.loginURL(base))
	}
}
