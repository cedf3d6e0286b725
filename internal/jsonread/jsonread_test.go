package jsonread

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"
)

// inner and sample hold the kinds of field mmk's records and models
// have, and some they do not: numbers of each size, pointers, slices,
// maps, times, raw JSON, embedded fields, an interface (not ",string"
// fields: see the package comment).
type inner struct {
	A  int               `json:"a"`
	B  []float64         `json:"b,omitempty"`
	M  map[string]string `json:"m"`
	Pt *inner            `json:"pt,omitempty"`
}

type Embedded struct {
	E string `json:"e"`
}

type sample struct {
	Embedded
	S        string          `json:"s"`
	I        int             `json:"i"`
	I8       int8            `json:"i8"`
	U        uint32          `json:"u"`
	F        float64         `json:"f"`
	B        bool            `json:"b"`
	T        time.Time       `json:"t"`
	D        time.Duration   `json:"d"`
	P        *int            `json:"p"`
	L        []string        `json:"l"`
	A        [2]int          `json:"arr"`
	Raw      json.RawMessage `json:"raw"`
	By       []byte          `json:"by"`
	Any      any             `json:"any"`
	Q        int             `json:"q,string"`
	N        inner           `json:"n"`
	Ns       []inner         `json:"ns"`
	Untagged string
}

var seeds = []string{
	`{"e":"x","s":"a","i":-3,"i8":127,"u":4,"f":1.5e3,"b":true,"t":"2026-11-29T22:04:05.123Z","d":1000,"p":7,"l":["a","b"],"arr":[1,2],"raw":{"x":[1,2]},"by":"AAE=","any":{"k":[1,"2",null,true]},"n":{"a":1,"b":[0.5],"m":{"k":"v"},"pt":{"a":2}},"ns":[{"a":3}],"Untagged":"u"}`,
	`{"S":"case","I":1,"UNTAGGED":"u","s":"twice","s":"again"}`,
	`{"i8":128}`, `{"u":-1}`, `{"i":1.5}`, `{"f":"1"}`, `{"t":"yesterday"}`, `{"arr":[1,2,3]}`,
	`{"unknown":1}`, `{"n":{"zz":1}}`, `{"s":"\ud800"}`, "{\"s\":\"\xff\"}", `null`, `[]`, `{} {}`, `{}x`, ` {} `, `{"p":null,"l":null}`,
	`{"by":"not base64"}`, `{"any":1e400}`, `{"i":1e2}`,
}

// FuzzAsEncodingJSON: Unmarshal reads as encoding/json.Unmarshal does
// and UnmarshalKnown as encoding/json's Decoder with
// DisallowUnknownFields (one value, nothing after it) does: the same
// verdict and, where both read it, the same values.
func FuzzAsEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		data := []byte(text)
		var got, want sample
		errGot, errWant := Unmarshal(data, &got), json.Unmarshal(data, &want)
		same(t, "Unmarshal", text, errGot, errWant, got, want)
		got, want = sample{}, sample{}
		errGot, errWant = UnmarshalKnown(data, &got), decodeKnown(data, &want)
		same(t, "UnmarshalKnown", text, errGot, errWant, got, want)
	})
}

// TestSeeds runs the fuzz test's seeds (as go test does) and checks
// that they reach both verdicts and the fields they are for.
func TestSeeds(t *testing.T) {
	var read, refused int
	for _, s := range seeds {
		var v sample
		if Unmarshal([]byte(s), &v) == nil {
			read++
		} else {
			refused++
		}
	}
	if read < 5 || refused < 5 {
		t.Errorf("%d seeds read, %d refused: want several of each", read, refused)
	}
	var v sample
	if err := Unmarshal([]byte(seeds[0]), &v); err != nil || v.E != "x" || v.N.Pt == nil || v.N.Pt.A != 2 || v.D != time.Microsecond || string(v.Raw) != `{"x":[1,2]}` {
		t.Errorf("the full seed read as %+v, %v", v, err)
	}
	if err := UnmarshalKnown([]byte(`{"n":{"zz":1}}`), &v); err == nil {
		t.Error("UnmarshalKnown read an unknown field")
	}
}

func decodeKnown(data []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the value")
	}
	return nil
}

func same(t *testing.T, what, text string, errGot, errWant error, got, want sample) {
	t.Helper()
	if (errGot == nil) != (errWant == nil) {
		t.Fatalf("%s of %q: %v, encoding/json's %v", what, text, errGot, errWant)
	}
	if errGot == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s of %q read\n%+v\nencoding/json's\n%+v", what, text, got, want)
	}
}
