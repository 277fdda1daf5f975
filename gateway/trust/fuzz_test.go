package trust

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func FuzzReadTrust(f *testing.F) {
	d := "abababababababababababababababababababababababababababababababab"
	seeds := []string{
		"",
		"{}",
		`{"version":1,"records":[]}`,
		`{"version":1,"records":[{"projectRoot":"/p","id":"fs","digest":"` + d + `","fields":{"command":"` + d + `"},"actionClass":"read","trustedAt":"2026-01-02T03:04:05Z"}]}`,
		`{"version":1,"records":[{"projectRoot":"/p","id":"fs","digest":"` + d + `","actionClass":"read","trustedAt":"2026-01-02T03:04:05Z"},{"projectRoot":"/p","id":"fs","digest":"` + d + `","actionClass":"read","trustedAt":"2026-01-02T03:04:05Z"}]}`,
		`{"version":1,"records":[{"projectRoot":"p","id":"FS","digest":"x","actionClass":"w"}]}`,
		`{"version":1,"records":[]} trailing`,
		`[1,2,3]`,
		`{"version":1e400}`,
		string(validFile(2)),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
		} else {
			if len(recs) > MaxRecords {
				t.Fatalf("%d records accepted", len(recs))
			}
			for i := range recs {
				if err := validate(&recs[i], i); err != nil {
					t.Fatalf("invalid record accepted: %v", err)
				}
			}
			// Round trip: what we write we read back identically.
			enc, err := Encode(recs)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Decode(enc)
			if err != nil {
				t.Fatalf("re-encoded file does not decode: %v", err)
			}
			enc2, _ := Encode(back)
			if !bytes.Equal(enc, enc2) {
				t.Fatal("encoding is not stable")
			}
		}
		// Read agrees with Decode, never fails and never rewrites the file.
		file := filepath.Join(dir, FileName)
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		st := Read(file)
		if (err == nil) != (len(st.Diagnostics) == 0) {
			t.Fatalf("Read and Decode disagree: %v vs %v", err, st.Diagnostics)
		}
		if err == nil && len(recs) > 0 && !reflect.DeepEqual(st.Records, recs) {
			t.Fatal("Read returned different records")
		}
		got, _ := os.ReadFile(file)
		if !bytes.Equal(got, data) {
			t.Fatal("Read rewrote the file")
		}
	})
}
