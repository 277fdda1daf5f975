package trust

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
		`{"version":1,"records":[{"projectRoot":"/p","id":"fx_","digest":"` + d + `","actionClass":"read","trustedAt":"2026-01-02T03:04:05Z"},{"projectRoot":"/p","id":"fs","digest":"` + d + `","trustedAt":"2026-01-02T03:04:05Z"}]}`,
		`{"version":1,"records":[{"projectRoot":"/p","id":"_","digest":"` + d + `","trustedAt":"2026-01-02T03:04:05Z"}]}`,
		string(validFile(2)),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, ignored, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
		} else {
			if len(recs)+len(ignored) > MaxRecords {
				t.Fatalf("%d records accepted", len(recs)+len(ignored))
			}
			for i := range recs {
				if err := validate(&recs[i], i); err != nil {
					t.Fatalf("invalid record accepted: %v", err)
				}
			}
			all := append([]Record(nil), recs...)
			for _, ig := range ignored {
				if !strings.HasSuffix(ig.Record.ID, "_") || validate(&ig.Record, ig.Index) == nil {
					t.Fatalf("record %d set aside for no id fault: %+v", ig.Index, ig.Record)
				}
				all = append(all, ig.Record)
			}
			// Round trip: what we write (ignored records included, as
			// update writes them back) we read back identically.
			enc, err := Encode(all)
			if err != nil {
				t.Fatal(err)
			}
			back, backIgnored, err := Decode(enc)
			if err != nil {
				t.Fatalf("re-encoded file does not decode: %v", err)
			}
			if len(back) != len(recs) || len(backIgnored) != len(ignored) {
				t.Fatalf("round trip: %d+%d records, want %d+%d", len(back), len(backIgnored), len(recs), len(ignored))
			}
			for _, ig := range backIgnored {
				back = append(back, ig.Record)
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
		if (err == nil) != (len(st.Diagnostics) == 0) || len(st.Warnings) != len(ignored) {
			t.Fatalf("Read and Decode disagree: %v, %d ignored vs %v, %v", err, len(ignored), st.Diagnostics, st.Warnings)
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
