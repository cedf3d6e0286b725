package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// decodeAsDecoder is the strict read as it was: encoding/json's Decoder
// with DisallowUnknownFields, nothing after the record, and (required)
// the fields always written present and none given twice, by the
// reference check missingFieldsFolded.
func decodeAsDecoder(body []byte, dst any, required bool) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the record")
	}
	return missingFieldsFolded(body, reflect.TypeOf(dst).Elem(), "", required)
}

// strictSeeds are records as mmk writes them (a job with every part
// that holds structs, an event, a reconfiguration) and damaged ones.
func strictSeeds(t testing.TB) []string {
	exit := 3
	j := ownedJob("0000000000000001")
	j.Spec.Env = map[string]string{"A": "1"}
	j.Spec.Workload = &Workload{Model: "resnet50", Batch: 8, Mode: "train"}
	j.Grant = &Grant{Env: []string{"X=1"}, Mounts: []Mount{{Path: "/dev/nvidia0"}, {Path: "/dev/nvidiactl", ReadOnly: true}}}
	j.Wait = &Wait{Reason: "no room", Class: "memory", Since: time.Unix(1, 0).UTC()}
	j.ExitCode = &exit
	job, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := json.Marshal(Event{Seq: 1, To: Running, Time: time.Unix(2, 0).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := json.Marshal(Reconfig{GPU: 1, Cause: "arrival"})
	if err != nil {
		t.Fatal(err)
	}
	b := string(job)
	return []string{b, string(ev), string(rc),
		strings.Replace(b, `"uid"`, `"ukd"`, 1),
		strings.Replace(b, `"readOnly":true`, `"readOnly":true,"mode":1`, 1),
		strings.Replace(b, `"path":"/dev/nvidia0"`, `"path":"/dev/nvidia0","PATH":"x"`, 1),
		strings.Replace(b, `{"path":"/dev/nvidia0"}`, `null`, 1),
		strings.Replace(b, `"model":"resnet50"`, `"modle":"resnet50"`, 1),
		strings.Replace(b, `"restarts":0,`, ``, 1),
		strings.Replace(b, `"id":`, `"\u0069d":`, 1),
		strings.Replace(b, `"id":`, `"\u0069x":`, 1),
		strings.Replace(b, `"env":{"A":"1"}`, `"env":{"A":"1","B":{"c":1}}`, 1),
		b + ` {}`, b + " \n", `[` + b + `]`, `null`, `{}`, `{"id":1}`,
	}
}

// FuzzStrictAsDecoder: the strict read (json.Unmarshal and one scan of
// the members, decodeStrict) refuses exactly what the Decoder with
// DisallowUnknownFields and the reference field check refused, for a
// job, an event and a reconfiguration, with the missing-field check
// (summed records) and without it (legacy ones), and what it accepts it
// reads as the Decoder did.
func FuzzStrictAsDecoder(f *testing.F) {
	for _, s := range strictSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, required := range []bool{true, false} {
			for _, mk := range []func() any{func() any { return new(Job) }, func() any { return new(Event) }, func() any { return new(Reconfig) }} {
				now, was := mk(), mk()
				errNow := decodeStrict([]byte(text), now, required)
				errWas := decodeAsDecoder([]byte(text), was, required)
				if (errNow == nil) != (errWas == nil) {
					t.Fatalf("%T required %v: %s\nnow %v\nthe Decoder's %v", now, required, text, errNow, errWas)
				}
				if errNow == nil && !reflect.DeepEqual(now, was) {
					t.Fatalf("%T: %s read as %+v, the Decoder's %+v", now, text, now, was)
				}
			}
		}
	})
}

// TestStrictCoversRecordTypes: the scan finds an unknown key wherever
// encoding/json would (fields of structs, through pointers, elements of
// slices and arrays of structs), which holds while the record types
// have no embedded struct (whose fields JSON promotes), no exported
// field without a json tag (which JSON reads by its Go name) and no map
// or nested slice holding structs (whose keys the scan does not visit).
// A change that adds one fails here: the scan must learn it first.
func TestStrictCoversRecordTypes(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(ty reflect.Type, path string, inContainer bool)
	walk = func(ty reflect.Type, path string, inContainer bool) {
		for ty.Kind() == reflect.Pointer {
			ty = ty.Elem()
		}
		switch ty.Kind() {
		case reflect.Slice, reflect.Array:
			et := ty.Elem()
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if inContainer && et.Kind() == reflect.Struct {
				t.Errorf("%s: a nested container of structs", path)
			}
			walk(ty.Elem(), path+"[]", true)
		case reflect.Map:
			walk(ty.Elem(), path+"{}", true)
			if et := ty.Elem(); et.Kind() == reflect.Struct || et.Kind() == reflect.Pointer && et.Elem().Kind() == reflect.Struct {
				t.Errorf("%s: a map of structs", path)
			}
		case reflect.Struct:
			if seen[ty] || reflect.PointerTo(ty).Implements(reflect.TypeFor[json.Unmarshaler]()) {
				return
			}
			seen[ty] = true
			for i := range ty.NumField() {
				f := ty.Field(i)
				_, tagged := f.Tag.Lookup("json")
				switch {
				case f.Anonymous:
					t.Errorf("%s: embeds %s", path, f.Type)
				case f.IsExported() && !tagged:
					t.Errorf("%s.%s: exported without a json tag", path, f.Name)
				case slices.Contains(strings.Split(f.Tag.Get("json"), ",")[1:], "string"):
					t.Errorf("%s.%s: a \",string\" field, which jsonread does not read as encoding/json does", path, f.Name)
				}
				walk(f.Type, path+"."+f.Name, false)
			}
		}
	}
	for _, v := range []any{Job{}, Event{}, Reconfig{}} {
		walk(reflect.TypeOf(v), reflect.TypeOf(v).Name(), false)
	}
}

// BenchmarkUnmarshalJob: a job's record as a start reads it, by
// encoding/json and by unmarshal (the same values: FuzzStrictAsDecoder),
// and the whole strict read of it (unmarshal and the scan of its
// fields). Compare the rows of one run.
func BenchmarkUnmarshalJob(b *testing.B) {
	body, err := json.Marshal(ownedJob("0000000000000001"))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		read func([]byte, any) error
	}{
		{"encoding-json", json.Unmarshal},
		{"unmarshal", unmarshal},
		{"strict", func(d []byte, v any) error { return decodeStrict(d, v, true) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var j Job
				if err := c.read(body, &j); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
