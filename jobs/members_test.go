package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMembers: the scan that finds a record's members (missingFields,
// keyFields.load) splits objects as encoding/json reads them, and
// refuses what it cannot take.
func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		text string
		keys []string
		vals []string
		ok   bool
	}{
		{`{}`, nil, nil, true},
		{` { "a" : 1 , "b":"x" } `, []string{"a", "b"}, []string{"1", `"x"`}, true},
		{`{"s":"a \"}\" {[","n":{"x":[1,{"y":"]"}]},"t":true,"z":null}`, []string{"s", "n", "t", "z"},
			[]string{`"a \"}\" {["`, `{"x":[1,{"y":"]"}]}`, "true", "null"}, true},
		{`{"a":-1.5e3,"b":[]}`, []string{"a", "b"}, []string{"-1.5e3", "[]"}, true},
		{`{"a\u0062":1}`, nil, nil, false}, // a key with an escape
		{`[1]`, nil, nil, false},
		{`{"a":1`, nil, nil, false},
		{`{"a" 1}`, nil, nil, false},
		{`{"a":"x}`, nil, nil, false},
		{`{"a":}`, nil, nil, false},
	} {
		keys, vals, ok := members([]byte(tc.text), nil, nil)
		var ks, vs []string
		for i := range keys {
			if !ok {
				break // what a failed scan found says nothing
			}
			ks, vs = append(ks, string(keys[i])), append(vs, string(vals[i]))
		}
		if ok != tc.ok || !slices.Equal(ks, tc.keys) || !slices.Equal(vs, tc.vals) {
			t.Errorf("members(%s) = %q %q %v, want %q %q %v", tc.text, ks, vs, ok, tc.keys, tc.vals, tc.ok)
		}
	}
}

// FuzzMembers: wherever the scan takes an object that encoding/json
// reads, it finds the same members with the same values.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":{"c":[1,"]"]}}`, `{"s":"x\"y","t":null}`, `{"a":1,"a":2}`, "{\"\xff\":null}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		keys, vals, ok := members([]byte(text), nil, nil)
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(text), &obj) != nil || obj == nil {
			return // not an object encoding/json reads: the scan may say anything but must not panic
		}
		if !ok || !utf8.ValidString(text) {
			// A key with an escape is decoded instead; encoding/json
			// reads bytes that are not UTF-8 as U+FFFD, which no field's
			// name holds.
			return
		}
		seen := map[string]string{}
		for i := range keys {
			seen[string(keys[i])] = string(vals[i]) // the last of a duplicate, as encoding/json keeps
		}
		if len(seen) != len(obj) {
			t.Fatalf("%s: members %q, encoding/json %d", text, seen, len(obj))
		}
		for k, v := range obj {
			if strings.TrimSpace(seen[k]) != strings.TrimSpace(string(v)) {
				t.Fatalf("%s: member %q is %q, encoding/json %q", text, k, seen[k], v)
			}
		}
	})
}

// TestKeyFieldsLoad: what keysToMend reads of a job's record is what the
// whole record says.
func TestKeyFieldsLoad(t *testing.T) {
	o := Owner{UID: 1000, GID: 1000, Name: "ann"}
	for _, j := range []Job{
		{ID: "06h2d698667tt4b0", State: Pending, IdempotencyKey: `k "1"`, Owner: &o},
		{ID: "06h2d698667tt4b1", State: Running},
	} {
		rec, err := EncodeRecord(j)
		if err != nil {
			t.Fatal(err)
		}
		var k keyFields
		if err := k.load(rec); err != nil {
			t.Fatal(err)
		}
		if got := k.job(); idemKey(got) != idemKey(j) || got.ID != j.ID {
			t.Errorf("%s: key %q, want %q", j.ID, idemKey(got), idemKey(j))
		}
	}
}

// jobText is a job record's JSON as mmk writes it.
func jobText(t testing.TB) string {
	o := Owner{UID: 1000, GID: 1000, Name: "ann"}
	b, err := json.Marshal(Job{ID: "06h2d698667tt4b0", State: Pending, Owner: &o, IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzMissingFields: on valid JSON (what the strict decode hands it) the
// check agrees with missingFieldsFolded (every member listed by
// encoding/json's tokens, matched to fields as it matches them: a job
// whose owner lacks its uid is refused however its keys are spelled or
// repeated, "owner":null,"owner":{"gid":1000} included), and accepts
// what mmk writes (the first seed). Before the scan the check decoded
// into a map and matched keys by exact spelling: a field given twice
// counted by its last value, and "OWNER" went unchecked.
func FuzzMissingFields(f *testing.F) {
	body := jobText(f)
	for _, s := range []string{body,
		strings.Replace(body, `"owner":{`, `"owner":null,"owner":{`, 1),
		strings.Replace(body, `"owner":{"uid":1000,`, `"owner":null,"owner":{`, 1),
		strings.Replace(body, `"owner":{"uid":1000,`, `"owner":{"uid":1000,"gid":1},"owner":{`, 1),
		strings.Replace(body, `"restarts":0,`, ``, 1),
		strings.Replace(body, `"id":`, `"\u0069d":`, 1),
	} {
		f.Add(s)
	}
	typ := reflect.TypeFor[Job]()
	f.Fuzz(func(t *testing.T, text string) {
		if !json.Valid([]byte(text)) {
			return // missingFields reads only what the strict decode took
		}
		now := missingFields([]byte(text), typ, "")
		folded := missingFieldsFolded([]byte(text), typ, "", true)
		if (folded == nil) != (now == nil) || text == body && now != nil {
			t.Fatalf("%s: the check %v, the reference %v", text, now, folded)
		}
	})
}

// TestKeyFieldsAsDecoded: what keysToMend reads of a record is what
// encoding/json makes of it whole, whatever the spelling of its keys.
func TestKeyFieldsAsDecoded(t *testing.T) {
	body := jobText(t)
	for _, text := range []string{body,
		strings.Replace(body, `"idempotencyKey":"k"`, `"idempotencyKey":"k","IDEMPOTENCYKEY":"k2"`, 1),
		strings.Replace(body, `"idempotencyKey":"k"`, `"idempotencyKey":"k","idempotencyKey":"k2"`, 1),
		strings.Replace(body, `"idempotencyKey":"k"`, "\"idempotency\u212aey\":\"k3\"", 1), // the Kelvin sign folds to k
		strings.Replace(body, `"owner":{"uid":1000`, `"OWNER":{"uid":7`, 1),
	} {
		rec := fmt.Appendf([]byte(text), "%s%08x", sumPrefix, crc32.Checksum([]byte(text), castagnoli))
		var want Job
		if err := json.Unmarshal([]byte(text), &want); err != nil {
			t.Fatal(err)
		}
		var k keyFields
		if err := k.load(rec); err != nil {
			t.Fatal(err)
		}
		if got := k.job(); idemKey(got) != idemKey(want) || got.ID != want.ID {
			t.Errorf("%s: key %q, encoding/json %q", text, idemKey(got), idemKey(want))
		}
	}
}

// TestFieldsAsDecoded: a key names a field as encoding/json reads it,
// without regard to case, and a field given twice is refused: the
// owner's check is not skipped by a key spelled "OWNER" (before, it
// was: the job's owner read uid 0).
func TestFieldsAsDecoded(t *testing.T) {
	body := jobText(t)
	typ := reflect.TypeFor[Job]()
	for _, tc := range []struct {
		text, want string
	}{
		{body, ""},
		{strings.Replace(body, `"owner":{"uid":1000,`, `"OWNER":{`, 1), `field "owner.uid" is missing`},
		{strings.Replace(body, `"owner":{"uid":1000,`, `"Owner":{"UID":1000,`, 1), ""},
		{strings.Replace(body, `"owner":{`, `"owner":null,"owner":{`, 1), `field "owner" is given 2 times`},
		{strings.Replace(body, `"restarts":0`, `"restarts":0,"RESTARTS":1`, 1), `field "restarts" is given 2 times`},
		{strings.Replace(body, `"taskKey":""`, "\"tas\u212aKey\":\"\"", 1), ""}, // the Kelvin sign is k
		{strings.Replace(body, `"taskKey":""`, `"task_key":""`, 1), `field "taskKey" is missing`},
	} {
		err := missingFields([]byte(tc.text), typ, "")
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.text, err, tc.want)
		}
	}
}

// missingFieldsFolded is the reference of the check as it is now: the
// members as encoding/json's tokens list them (a key given twice
// twice), each matched to a field as encoding/json matches keys
// (strings.EqualFold). Without required it finds only fields given
// twice, as the strict read of a legacy record does.
func missingFieldsFolded(body []byte, t reflect.Type, path string, required bool) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	switch {
	case err == nil && tok == nil && !required:
		return nil // null: no field given twice
	case err != nil || tok != json.Delim('{'):
		return fmt.Errorf("%s: not an object", path)
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		keys, vals = append(keys, tok.(string)), append(vals, raw)
	}
	for _, f := range fields(t).all {
		var found []json.RawMessage
		for i, k := range keys {
			if strings.EqualFold(k, f.name) {
				found = append(found, vals[i])
			}
		}
		switch {
		case len(found) > 1:
			return fmt.Errorf("field %q given twice", path+f.name)
		case len(found) == 0 && f.required && required:
			return fmt.Errorf("field %q is missing", path+f.name)
		case len(found) == 1 && f.nested != nil && string(found[0]) != "null":
			if err := missingFieldsFolded(found[0], f.nested, path+f.name+".", required); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestFieldProblemManyFields: a struct with more fields than
// fieldProblem keeps on its stack (maxFields) is checked as well, its
// counts on the heap: every field found, one missing, one given twice.
func TestFieldProblemManyFields(t *testing.T) {
	var sf []reflect.StructField
	var all []string
	for i := range maxFields + 1 {
		sf = append(sf, reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: reflect.TypeFor[int](), Tag: reflect.StructTag(fmt.Sprintf(`json:"f%d"`, i))})
		all = append(all, fmt.Sprintf(`"f%d":%d`, i, i))
	}
	typ := reflect.StructOf(sf)
	last := fmt.Sprintf("f%d", maxFields)
	for _, tc := range []struct {
		body, want string
	}{
		{"{" + strings.Join(all, ",") + "}", ""},
		{"{" + strings.Join(all[:maxFields], ",") + "}", `field "` + last + `" is missing`},
		{"{" + strings.Join(all, ",") + `,"F0":1}`, `field "f0" is given 2 times`},
	} {
		err := missingFields([]byte(tc.body), typ, "")
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("%d fields: %v, want %q", maxFields+1, err, tc.want)
		}
	}
}
