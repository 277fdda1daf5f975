package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"sluice/gateway/internal/files"
	"sluice/gateway/proc"
)

const maxStoreBytes = 64 << 10

// record is one server's stored authorization: the client identity it was
// issued to, bound to the issuer, and the tokens. The file is 0600 in a
// 0700 directory, written atomically (temp file, fsync, rename).
type record struct {
	Version  int    `json:"version"`
	Resource string `json:"resource"` // the server URL the record belongs to
	Issuer   string `json:"issuer"`

	TokenEndpoint string `json:"tokenEndpoint"`
	AuthMethod    string `json:"authMethod"`
	ClientID      string `json:"clientId"`
	// ClientSecret is kept only for a dynamically registered client (a
	// declared secret stays in the declaration's reference).
	ClientSecret string `json:"clientSecret,omitempty"`
	Registered   bool   `json:"registered,omitempty"`

	AccessToken  string    `json:"accessToken,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scopes       []string  `json:"scopes,omitempty"` // to ask for at the next authorization
	// TokenScopes are the scopes the stored token was asked with.
	TokenScopes []string  `json:"tokenScopes,omitempty"`
	Saved       time.Time `json:"saved"`
}

// forgetIssuer drops what is bound to the authorization server: tokens
// and the client registration. The scopes belong to the resource and stay.
func (r *record) forgetIssuer() {
	r.AccessToken, r.RefreshToken, r.Expiry, r.TokenScopes = "", "", time.Time{}, nil
	r.ClientID, r.ClientSecret, r.Registered, r.AuthMethod, r.TokenEndpoint = "", "", false, "", ""
}

// store is the token file of one server under <state dir>/oauth.
type store struct {
	dir, server, resource string
}

// file names the record by server id and a digest of the URL, so pointing
// a declaration at another URL never sends the old server's token.
func (s store) file() string {
	h := sha256.Sum256([]byte(s.resource))
	return filepath.Join(s.dir, s.server+"-"+hex.EncodeToString(h[:6])+".json")
}

func (s store) load() (*record, error) {
	f, err := os.Open(s.file())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStoreBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxStoreBytes {
		return nil, fmt.Errorf("oauth: token file %s is over %d bytes", s.file(), maxStoreBytes)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("oauth: token file %s is not valid JSON; remove it with `sluice auth %s --logout`", s.file(), s.server)
	}
	if r.Version != 1 || r.Resource != s.resource {
		return nil, nil
	}
	return &r, nil
}

func (s store) save(r *record) error {
	if err := proc.MkdirPrivate(s.dir); err != nil { // 0700; an owner-only ACL on Windows
		return err
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return err
	}
	r.Version, r.Resource, r.Saved = 1, s.resource, time.Now().UTC()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if len(b) > maxStoreBytes {
		// load would refuse it: writing it would lose the stored
		// authorization for one that can never be read back.
		return fmt.Errorf("oauth: the authorization of server %s is %d bytes, over the token file's cap of %d (the authorization server's tokens are too large); nothing was stored", s.server, len(b), maxStoreBytes)
	}
	// Temp file, fsync, rename, directory fsync; on Windows the rename
	// is retried while a reader holds the token file open.
	return files.WriteAtomic(s.file(), b, 0o600)
}

func (s store) remove() (bool, error) {
	err := os.Remove(s.file())
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// lock serializes refreshes across processes (a CLI call and serve may
// refresh the same rotating refresh token at once; the loser's token would
// be revoked). It returns the unlock function.
func (s store) lock() (func(), error) {
	if err := proc.MkdirPrivate(s.dir); err != nil { // 0700; an owner-only ACL on Windows
		return nil, err
	}
	return files.Lock(s.file() + ".lock")
}
