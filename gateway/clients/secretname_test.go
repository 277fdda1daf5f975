package clients

import "testing"

// TestSecretNameTakesEveryCredentialNameAndNoPlainOne: the one name rule
// (listing masks, import, the scrub) takes the names a passphrase,
// passcode, PIN-like code or short password is given under, however it
// reaches a server (an env entry, NAME=VALUE in args, a --flag VALUE), and
// leaves readable the ordinary names that only hold its letters.
func TestSecretNameTakesEveryCredentialNameAndNoPlainOne(t *testing.T) {
	const v = "plainvalue12345" // a value no shape rule takes
	secret := []string{
		"GPG_PASSPHRASE", "SSH_PASSPHRASE", "PASSPHRASE", "KEY_PASSPHRASE", "BORG_PASSPHRASE", "RESTIC_PASSWORD",
		"PASSCODE", "VPN_PASSCODE", "TRACKER_PASSKEY",
		"DB_PW", "LDAP_BIND_PW", "SMTP_PW", "PW", "MYSQL_PWD",
		"WALLET_MNEMONIC", "MNEMONIC", "SEED_PHRASE", "SEEDPHRASE", "WIFI_PSK",
		"SSHPASS", "REDIS_PASS", "PASS", "TOTP_SECRET", "DB_PASSWORD",
	}
	for _, name := range secret {
		if !LooksSecret(name, v) {
			t.Errorf("env %s=%s is not judged secret", name, v)
		}
		if off := ArgSecret([]string{"env", name + "=" + v, "srv"}, 1); off != len(name)+1 {
			t.Errorf("arg %s=%s: ArgSecret = %d, want %d", name, v, off, len(name)+1)
		}
	}
	for _, flag := range []string{"--passphrase", "--passcode", "--passkey", "--db-pw", "--pw", "--mnemonic", "--psk"} {
		if !SecretArg([]string{flag, v}, 1) {
			t.Errorf("%s %s is not judged secret", flag, v)
		}
	}
	// Ordinary names that hold a credential's letters: BYPASS, COMPASS and
	// PASSTHROUGH are words; PWD and OLDPWD are the shell's directories;
	// PWDEBUG and PW_TEST_* are Playwright's debug and test switches
	// (PW_DEBUG is no such switch but reads as one); PASSENGER_* is the
	// Passenger app server's; a name that only ends in PW's letters
	// (GPU_POWER_CAP) or starts a word with them is not one either.
	plain := []string{
		"BYPASS", "COMPASS", "COMPASS_HEADING", "PASSTHROUGH", "PASS_THROUGH", "PASSENGER_APP_ENV",
		"PWD", "OLDPWD", "PWDEBUG", "PW_DEBUG", "PW_TEST_REPORTER", "PW_TEST_HTML_REPORT_OPEN",
		"GPU_POWER_CAP", "NEWPW_LEN", "PSKEL", "KEYBOARD_LAYOUT", "MODE", "PATH",
	}
	for _, name := range plain {
		if LooksSecret(name, v) {
			t.Errorf("env %s=%s is judged secret: its value would be hidden", name, v)
		}
		if off := ArgSecret([]string{"env", name + "=" + v, "srv"}, 1); off >= 0 {
			t.Errorf("arg %s=%s is judged secret (offset %d)", name, v, off)
		}
	}
}
