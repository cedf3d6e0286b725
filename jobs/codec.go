package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mmkgpu/mmk/internal/jsonread"
)

// A record of the store (a job, an event, a reconfiguration) and a job's
// record in its directory is its JSON followed by a checksum line:
//
//	{"id":"...",...}
//	crc32c=1a2b3c4d
//
// and is read strictly: the checksum must match, a field this mmk does
// not know or a field it always writes that is missing makes the record
// damaged (set aside and put back from the backup, as an unreadable one
// is). Before (schema 1) records were read leniently, and one flipped
// bit in a key dropped the field: "uid" read as "ukd" left a job's owner
// uid 0, and the job ran as root (issue 54).

// sumPrefix starts the checksum line; sumLen is the line's length with
// its 8 hex digits.
const (
	sumPrefix = "\ncrc32c="
	sumLen    = len(sumPrefix) + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrNoChecksum is a record without a checksum line where one is needed
// (in a store of schema 2 every record has one).
var ErrNoChecksum = errors.New("the record has no checksum")

// EncodeRecord is v's record: its JSON and its checksum line.
func EncodeRecord(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(b, "%s%08x", sumPrefix, crc32.Checksum(b, castagnoli)), nil
}

// decodeRecord reads a record into dst (a pointer to a struct), strictly.
// With legacy, a record without a checksum line (schema 1) is read as
// well; its fields this mmk does not know still make it damaged, but not
// missing ones (an older mmk may not have written them).
func decodeRecord(data []byte, dst any, legacy bool) error {
	body, summed, err := splitSum(data)
	if err != nil {
		return err
	}
	if !summed && !legacy {
		return ErrNoChecksum
	}
	return decodeStrict(body, dst, summed)
}

// decodeStrict reads a record's JSON into dst as encoding/json's Decoder
// with DisallowUnknownFields does, and with required also refuses a
// field mmk always writes that is missing, or any field given twice:
// unmarshal reads it, and one scan of its members (fieldProblem)
// finds the fields unknown, missing and repeated. A start reads every
// record through it; the Decoder copied each record into its buffer
// first (a fifth of a record's time; FuzzStrictAsDecoder holds the two
// to the same verdicts).
func decodeStrict(body []byte, dst any, required bool) error {
	if err := unmarshal(body, dst); err != nil {
		var syntax *jsonread.SyntaxError
		if errors.As(err, &syntax) && strings.Contains(err.Error(), "after top-level value") {
			return errors.New("data after the record")
		}
		return err
	}
	return fieldsError(body, reflect.TypeOf(dst).Elem(), "", fieldChecks{required: required, known: true, repeats: true})
}

// splitSum splits a record into its JSON and whether a checksum line
// vouched for it; a checksum line that does not match is an error.
func splitSum(data []byte) (body []byte, summed bool, err error) {
	n := len(data)
	if n < sumLen || string(data[n-sumLen:n-8]) != sumPrefix {
		return data, false, nil
	}
	body = data[:n-sumLen]
	hex := data[n-8:]
	// Lower case only, as EncodeRecord writes it: a flipped bit that
	// turns a into A is a change too.
	if bytes.ContainsFunc(hex, func(r rune) bool { return (r < '0' || r > '9') && (r < 'a' || r > 'f') }) {
		return nil, false, fmt.Errorf("checksum %q is not 8 lower-case hex digits", hex)
	}
	want, err := strconv.ParseUint(string(hex), 16, 32)
	if err != nil {
		return nil, false, fmt.Errorf("checksum %q: %w", hex, err)
	}
	if got := crc32.Checksum(body, castagnoli); uint32(want) != got {
		return nil, false, fmt.Errorf("checksum %08x does not match the record's %08x: the record was changed", want, got)
	}
	return body, true, nil
}

// loadRecord is a record read in the store's daily work (Get, All,
// Events): every record was read strictly (decodeRecord) when the store
// was opened, and every one written since is whole by construction, so
// the checksum is checked and the JSON read plainly, at a third of the
// cost.
func loadRecord(data []byte, dst any) error {
	body, err := summedBody(data)
	if err != nil {
		return err
	}
	return unmarshal(body, dst)
}

// unmarshal is encoding/json's Unmarshal in half its time (jsonread): a
// start reads every record of the store (BenchmarkUnmarshalJob: 2.0
// against 3.7 µs a job, 6 allocations against 17). FuzzStrictAsDecoder
// holds it to encoding/json's Decoder.
func unmarshal(data []byte, dst any) error { return jsonread.Unmarshal(data, dst) }

// summedBody is a record's JSON, its checksum line checked; a record
// without one is ErrNoChecksum.
func summedBody(data []byte) ([]byte, error) {
	body, summed, err := splitSum(data)
	if err == nil && !summed {
		err = ErrNoChecksum
	}
	return body, err
}

// reencode is a record as this mmk writes it: a legacy record gets its
// checksum line, a summed one stays as it is.
func reencode(data []byte, dst any) ([]byte, error) {
	if _, summed, err := splitSum(data); err != nil || summed {
		return data, err
	}
	if err := decodeRecord(data, dst, true); err != nil {
		return nil, err
	}
	return EncodeRecord(dst)
}

// missingFields names the first field of t (a struct, nested in a
// struct field at path) that encoding/json always writes (its tag has
// neither omitempty nor omitzero) and body lacks, or a field body gives
// twice. body has been decoded strictly already (decodeRecord): its
// members are found by a scan of its text (members), not decoded again;
// an object the scan does not take (a key with an escape) is decoded. A
// key names a field as encoding/json reads it: without regard to case
// (bytes.EqualFold). Before, keys were matched by their exact spelling:
// a record whose owner was keyed "OWNER" filled the job's owner without
// its owner's check.
func missingFields(body []byte, t reflect.Type, path string) error {
	return fieldsError(body, t, path, fieldChecks{required: true, repeats: true})
}

// fieldChecks are what fieldProblem refuses: a required field missing,
// a key that names no field of its struct (known: at any depth, the
// elements of a slice of structs too, as encoding/json's
// DisallowUnknownFields has it), a field given twice.
type fieldChecks struct{ required, known, repeats bool }

// fieldsError is fieldProblem's finding in words, under path.
func fieldsError(body []byte, t reflect.Type, path string, c fieldChecks) error {
	name, problem := fieldProblem(body, t, c)
	switch {
	case problem == "":
		return nil
	case strings.HasPrefix(problem, ":"): // an object the scan did not take
		return fmt.Errorf("%s%s", strings.TrimSuffix(path+name, "."), problem)
	case problem == problemUnknown:
		return fmt.Errorf("unknown field %q", path+name)
	}
	return fmt.Errorf("field %q %s", path+name, problem)
}

// problemUnknown is fieldProblem's word for a key that names no field.
const problemUnknown = "is unknown"

// maxFields bounds the fields of a struct whose counts fieldProblem
// keeps on its stack (a job has 25); a struct with more gets them on
// the heap.
const maxFields = 40

// fieldProblem is missingFields' work without its words: the path of
// the field at fault under t and what is wrong with it ("is missing",
// "is given N times", problemUnknown, or ": " and the error of an
// object the scan did not take, its path then the object's); "" when
// nothing is. A start reads every record through it: it allocates
// nothing but the path of a fault, which is made on the way out (a
// third of the strict read's time went to each record's counts and
// paths before).
func fieldProblem(body []byte, t reflect.Type, c fieldChecks) (path, problem string) {
	sc, keys, vals, ok := scan(body)
	defer sc.release()
	if !ok {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return "", ": " + err.Error()
		}
		keys, vals = keys[:0], vals[:0]
		for k, v := range obj {
			keys, vals = append(keys, []byte(k)), append(vals, v)
		}
		sc.keys, sc.vals = keys, vals
	}
	fs := fields(t)
	var countBuf [maxFields]int
	var valBuf [maxFields][]byte
	var count []int
	var val [][]byte
	if n := len(fs.all); n <= maxFields {
		count, val = countBuf[:n], valBuf[:n]
	} else {
		count, val = make([]int, n), make([][]byte, n)
	}
	for i, k := range keys {
		f := fs.find(k)
		if f < 0 {
			if c.known {
				return string(k), problemUnknown
			}
			continue
		}
		count[f]++
		val[f] = vals[i]
	}
	for i, f := range fs.all {
		switch {
		case count[i] > 1 && c.repeats:
			return f.name, fmt.Sprintf("is given %d times", count[i])
		case count[i] == 0 && f.required && c.required:
			return f.name, "is missing"
		case count[i] == 0 || string(val[i]) == "null": // nothing to look into
		case f.nested != nil:
			if sub, problem := fieldProblem(val[i], f.nested, c); problem != "" {
				return f.name + "." + sub, problem
			}
		case f.elems != nil && c.known:
			if sub, problem := elementsProblem(val[i], f.elems); problem != "" {
				return f.name + sub, problem
			}
		}
	}
	return "", ""
}

// elementsProblem is fieldProblem of each element of a JSON array of
// objects of struct t (null elements pass, as encoding/json leaves
// them zero), for unknown keys only (the fields always written are
// asked of the record's struct fields, not of a list's elements); the
// path starts with the element's index, "[2].".
func elementsProblem(body []byte, t reflect.Type) (path, problem string) {
	c := fieldChecks{known: true}
	var elems []json.RawMessage
	if err := json.Unmarshal(body, &elems); err != nil {
		return "", ": " + err.Error()
	}
	for i, e := range elems {
		if string(e) == "null" {
			continue
		}
		if sub, problem := fieldProblem(e, t, c); problem != "" {
			return fmt.Sprintf("[%d].%s", i, sub), problem
		}
	}
	return "", ""
}

// scratch holds a missingFields call's members (scratchPool: a store's
// open reads some hundred thousand records).
type scratch struct{ keys, vals [][]byte }

var scratchPool = sync.Pool{New: func() any { return &scratch{make([][]byte, 0, 32), make([][]byte, 0, 32)} }}

// scan is members of body into a scratch from the pool; release it once
// keys and vals are no longer read (a caller that appends to them sets
// the scratch's slices to what it appended).
func scan(body []byte) (sc *scratch, keys, vals [][]byte, ok bool) {
	sc = scratchPool.Get().(*scratch)
	sc.keys, sc.vals, ok = members(body, sc.keys[:0], sc.vals[:0])
	return sc, sc.keys, sc.vals, ok
}

// release drops what the slices point at (records of a transaction
// since closed) and gives the scratch back to the pool.
func (s *scratch) release() {
	clear(s.keys)
	clear(s.vals)
	scratchPool.Put(s)
}

// members splits the text of a JSON object into its members' keys (the
// bytes between the quotes) and values (their text), appended to keys
// and vals, without copying. ok is false where the text is not an
// object, or a key holds an escape (its bytes are not its name).
func members(body []byte, keys, vals [][]byte) (_, _ [][]byte, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return keys, vals, false
	}
	if i = skipSpace(body, i+1); i < len(body) && body[i] == '}' {
		return keys, vals, true
	}
	for i < len(body) && body[i] == '"' {
		j := i + 1
		for j < len(body) && body[j] != '"' && body[j] != '\\' {
			j++
		}
		if j >= len(body) || body[j] != '"' {
			return keys, vals, false
		}
		key := body[i+1 : j]
		if i = skipSpace(body, j+1); i >= len(body) || body[i] != ':' {
			return keys, vals, false
		}
		i = skipSpace(body, i+1)
		end, ok := skipValue(body, i)
		if !ok {
			return keys, vals, false
		}
		keys, vals = append(keys, key), append(vals, body[i:end])
		switch i = skipSpace(body, end); {
		case i < len(body) && body[i] == '}':
			return keys, vals, true
		case i < len(body) && body[i] == ',':
			i = skipSpace(body, i+1)
		default:
			return keys, vals, false
		}
	}
	return keys, vals, false
}

// skipValue is the end of the JSON value that starts at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	}
	j := i // a number, true, false or null
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && !isSpace(b[j]) {
		j++
	}
	return j, j > i
}

// skipString is the end of the JSON string that starts at b[i].
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// field is a JSON field of a struct: its name, the struct type it holds
// where it holds one (directly or through a pointer) that is read field
// by field (not by its own UnmarshalJSON, as time.Time is), and that of
// its elements where it is a slice or array of such structs.
type field struct {
	name     string
	nested   reflect.Type
	elems    reflect.Type
	required bool
}

// fieldSets are a struct's JSON fields (all) and their indices by their
// names in lower case (index).
type fieldSets struct {
	all   []field
	index map[string]int
}

// find is the index in all of the field key names as encoding/json
// matches keys to fields (bytes.EqualFold), -1 for none.
func (fs fieldSets) find(key []byte) int {
	var low [64]byte
	if len(key) > len(low) {
		return -1 // longer than any field's name
	}
	for i, c := range key {
		switch {
		case c >= utf8.RuneSelf:
			// Past ASCII encoding/json folds a few letters too (the
			// Kelvin sign to k): compared one by one.
			for j, f := range fs.all {
				if bytes.EqualFold(key, []byte(f.name)) {
					return j
				}
			}
			return -1
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		low[i] = c
	}
	if i, ok := fs.index[string(low[:len(key)])]; ok {
		return i
	}
	return -1
}

var fieldCache sync.Map // reflect.Type -> fieldSets

func fields(t reflect.Type) fieldSets {
	if v, ok := fieldCache.Load(t); ok {
		return v.(fieldSets)
	}
	var fs fieldSets
	unmarshaler := reflect.TypeFor[json.Unmarshaler]()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("json")
		if !sf.IsExported() || !ok || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		f := field{name: name, required: !strings.Contains(","+opts+",", ",omitempty,") && !strings.Contains(","+opts+",", ",omitzero,")}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && !reflect.PointerTo(ft).Implements(unmarshaler) {
			f.nested = ft
		}
		if ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array {
			et := ft.Elem()
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && !reflect.PointerTo(et).Implements(unmarshaler) {
				f.elems = et
			}
		}
		fs.all = append(fs.all, f)
	}
	fs.index = make(map[string]int, len(fs.all))
	for i, f := range fs.all {
		fs.index[strings.ToLower(f.name)] = i
	}
	fieldCache.Store(t, fs)
	return fs
}

// DecodeRecord reads a record of the store (or a job's job.json) as
// OpenStore does, strictly: its checksum line must match, and no field
// may be unknown or (in a record with a checksum) missing. A record of
// schema 1, without a checksum, is read too. For tools that read a
// store themselves (bench/storesweep).
func DecodeRecord(data []byte, dst any) error { return decodeRecord(data, dst, true) }
