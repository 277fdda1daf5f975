package main

import (
	"strings"
	"testing"
)

// TestPassphraseNamedEnvHiddenWhereShown: a passphrase, passcode or short
// password given in env under its usual name (GPG_PASSPHRASE,
// VPN_PASSCODE, LDAP_BIND_PW) is hidden by 'sluice servers' (text and
// --json) and by the lines 'sluice remove' prints, while a Playwright
// switch (PWDEBUG, PW_TEST_REPORTER) stays readable.
func TestPassphraseNamedEnvHiddenWhereShown(t *testing.T) {
	w := newWorld(t)
	w.writeUser(`servers:
  sign:
    command: /bin/cat
    env:
      GPG_PASSPHRASE: correct-horse-battery
      VPN_PASSCODE: otpcode0042
      LDAP_BIND_PW: plainpw2026
      PWDEBUG: console
      PW_TEST_REPORTER: listreport
`)
	secrets := []string{"correct-horse-battery", "otpcode0042", "plainpw2026"}
	check := func(what string, r result) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(r.stdout+r.stderr, s) {
				t.Errorf("%s shows %q:\n%s", what, s, r)
			}
		}
	}
	r := sluiceProc(t, "", "servers")
	want(t, r, exitOK, "GPG_PASSPHRASE=(hidden)", "LDAP_BIND_PW=(hidden)", `PWDEBUG="console"`, `PW_TEST_REPORTER="listreport"`)
	check("servers", r)
	r = sluiceProc(t, "", "servers", "--json")
	want(t, r, exitOK, `"VPN_PASSCODE": "(hidden)"`, `"PWDEBUG": "console"`)
	check("servers --json", r)
	r = sluiceProc(t, "", "remove", "sign")
	want(t, r, exitOK, "GPG_PASSPHRASE: (hidden)", "VPN_PASSCODE: (hidden)", "PW_TEST_REPORTER: listreport")
	check("remove", r)
}
