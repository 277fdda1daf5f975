package gateway

import (
	"testing"

	"sluice/gateway/config"
)

// TestScrubHidesPassphraseNamedSecrets: the stdout and stderr scrub takes
// a value by the listings' name rule, so a passphrase, passcode or short
// password named so (GPG_PASSPHRASE, DB_PW) is hidden when the server
// prints it, and a value under an ordinary name (PWDEBUG) is not.
func TestScrubHidesPassphraseNamedSecrets(t *testing.T) {
	env := map[string]string{
		"GPG_PASSPHRASE":   "correct-horse-battery",
		"VPN_PASSCODE":     "otpcode-0042",
		"DB_PW":            "plainpw2026",
		"PW_TEST_REPORTER": "listreport",
	}
	scrub := scrubber(declSecrets(config.Server{Command: "srv"}, env))
	if scrub == nil {
		t.Fatal("no value of GPG_PASSPHRASE, VPN_PASSCODE or DB_PW is scrubbed")
	}
	in := "gpg: correct-horse-battery; vpn: otpcode-0042; db: plainpw2026; reporter listreport"
	want := "gpg: (hidden); vpn: (hidden); db: (hidden); reporter listreport"
	if got := string(scrub.Scrub([]byte(in))); got != want {
		t.Errorf("Scrub(%q) = %q, want %q", in, got, want)
	}
}
