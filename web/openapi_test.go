package web

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/node"
)

// openAPIDocument is the part of an OpenAPI 3 document the tests read.
type openAPIDocument struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
}

// TestOpenAPIMatchesRoutes holds openapi.json to the routes New
// registers, both ways, so that the document cannot drift from the API.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc openAPIDocument
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi %q, want 3.x", doc.OpenAPI)
	}
	param := regexp.MustCompile(`[:*]([A-Za-z]+)`)
	var routes []string
	for _, r := range newTestServer(t).engine.Routes() {
		routes = append(routes, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, r := range routes {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routes, d) {
			t.Errorf("openapi.json documents %s, which is not a route", d)
		}
	}
	if len(routes) < 15 {
		t.Errorf("only %d routes: %v", len(routes), routes)
	}
}

// TestOpenAPIRefsResolve checks that every $ref of the document names a
// component it defines, and that every operation has an id and answers.
func TestOpenAPIRefsResolve(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "$ref" {
					ref, _ := x.(string)
					if resolve(doc, ref) == nil {
						t.Errorf("%s: $ref %q does not resolve", at, ref)
					}
					continue
				}
				walk(x, at+"/"+k)
			}
		case []any:
			for _, x := range v {
				walk(x, at)
			}
		}
	}
	walk(doc, "#")
	ids := map[string]bool{}
	for path, ops := range doc["paths"].(map[string]any) {
		for method, op := range ops.(map[string]any) {
			o := op.(map[string]any)
			id, _ := o["operationId"].(string)
			if id == "" || ids[id] {
				t.Errorf("%s %s: operationId %q missing or repeated", method, path, id)
			}
			ids[id] = true
			if resp, _ := o["responses"].(map[string]any); len(resp) == 0 {
				t.Errorf("%s %s has no responses", method, path)
			}
		}
	}
}

func resolve(doc map[string]any, ref string) any {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var v any = doc
	for _, part := range strings.Split(rest, "/") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

func TestOpenAPIServed(t *testing.T) {
	r := newTestServer(t).do(t, "GET", "/api/v1/openapi.json", "")
	if r.code != 200 || r.body != string(openAPIDoc) || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("openapi.json = %d (%s)", r.code, r.header.Get("Content-Type"))
	}
}

// TestOpenAPISpecFields: the document says what the submit fields of
// issue 37 mean: a job's working directory, its default and its check.
func TestOpenAPISpecFields(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	tests := []struct {
		schema, field string
		want          []string
	}{
		{"Spec", "workdir", []string{"absolute", "existing directory", "job's user", "400", "mmkctl", "current directory", "its own directory"}},
	}
	for _, tt := range tests {
		d := doc.Components.Schemas[tt.schema].Properties[tt.field].Description
		for _, w := range tt.want {
			if !strings.Contains(d, w) {
				t.Errorf("%s.%s: description %q lacks %q", tt.schema, tt.field, d, w)
			}
		}
	}
}

// schemaShape is what a schema (its $refs resolved, its allOf, oneOf and
// anyOf merged) lets a JSON value hold: the properties of an object,
// whether (and how) it takes others, the items of an array.
type schemaShape struct {
	props      map[string]any
	additional any  // the schema of other properties, if any
	anyKey     bool // additionalProperties: true
	items      any
}

// shapeOf flattens schema, a part of doc.
func shapeOf(doc map[string]any, schema any) schemaShape {
	sh := schemaShape{props: map[string]any{}}
	m, _ := schema.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		return shapeOf(doc, resolve(doc, ref))
	}
	props, _ := m["properties"].(map[string]any)
	for k, p := range props {
		sh.props[k] = p
	}
	switch a := m["additionalProperties"].(type) {
	case bool:
		sh.anyKey = a
	case map[string]any:
		sh.additional = a
	}
	sh.items = m["items"]
	for _, comb := range []string{"allOf", "oneOf", "anyOf"} {
		subs, _ := m[comb].([]any)
		for _, sub := range subs {
			s := shapeOf(doc, sub)
			for k, p := range s.props {
				sh.props[k] = p
			}
			sh.anyKey = sh.anyKey || s.anyKey
			if sh.additional == nil {
				sh.additional = s.additional
			}
			if sh.items == nil {
				sh.items = s.items
			}
		}
	}
	return sh
}

// undocumented lists the fields of v, a decoded JSON value, that schema
// does not document, as paths from at: an object's property the schema
// neither names nor takes as an additional one, at any depth.
func undocumented(doc map[string]any, schema, v any, at string) []string {
	sh := shapeOf(doc, schema)
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			sub, ok := sh.props[k]
			switch {
			case ok:
			case sh.additional != nil:
				sub = sh.additional
			case sh.anyKey:
				continue
			default:
				out = append(out, at+"."+k)
				continue
			}
			out = append(out, undocumented(doc, sub, x, at+"."+k)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, undocumented(doc, sh.items, x, at+"[]")...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// UndocumentedFields lists the fields of body, the JSON answer (status)
// of method on path (as openapi.json writes it: /api/v1/jobs/{id}), that
// the document's schema of that answer lacks. Tests of package web_test
// hold a real mmkd's answers to it.
func UndocumentedFields(method, path string, status int, body []byte) ([]string, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		return nil, err
	}
	paths, _ := doc["paths"].(map[string]any)
	ops, _ := paths[path].(map[string]any)
	op, _ := ops[strings.ToLower(method)].(map[string]any)
	if op == nil {
		return nil, fmt.Errorf("openapi.json has no %s %s", method, path)
	}
	resp, _ := op["responses"].(map[string]any)[strconv.Itoa(status)].(map[string]any)
	if ref, ok := resp["$ref"].(string); ok {
		resp, _ = resolve(doc, ref).(map[string]any)
	}
	content, _ := resp["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	schema := media["schema"]
	if schema == nil {
		return nil, fmt.Errorf("openapi.json: %s %s answers %d with no JSON schema", method, path, status)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return undocumented(doc, schema, v, "$"), nil
}

// fillTime is the time of every time a filled value holds.
var fillTime = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

// filled is a T with every exported field set, at any depth: strings
// "x", numbers 1, true, pointers to filled values, slices and maps of one
// filled element, times fillTime. Its JSON holds every field the type
// can have, omitempty ones too.
func filled[T any]() T {
	var v T
	fill(reflect.ValueOf(&v).Elem(), 0)
	return v
}

func fill(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(fillTime))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}

// TestOpenAPIDocumentsResponses holds openapi.json to what the API
// answers: every field of every JSON answer is in the answer's schema.
// The fake node holds values with every field set (filled), so that
// fields left out when empty are answered too; /api/v1/gpus reads the
// fake GPUs (a MIG GPU and one without). A real mmkd's answers, claims
// among them, are held to it by TestOpenAPIDocumentsMmkd (web_test).
// Before it, the GPUs' instances were objects of no documented field
// (issue 37: their name was in no schema).
func TestOpenAPIDocumentsResponses(t *testing.T) {
	ts := newTestServer(t)
	job, waiting := fillNode(ts)
	for _, tc := range []struct {
		method, path, doc, body string
		status                  int
	}{
		{"GET", "/api/v1/signin", "", "", 200},
		{"GET", "/healthz", "", "", 200},
		{"GET", "/readyz", "", "", 200},
		{"GET", "/api/v1/gpus", "", "", 200},
		{"GET", "/api/v1/whoami", "", "", 200},
		{"POST", "/api/v1/jobs", "", `{"command":["sleep","1"],"name":"new"}`, 201},
		{"GET", "/api/v1/jobs", "", "", 200},
		{"GET", "/api/v1/jobs/" + job.ID, "/api/v1/jobs/{id}", "", 200},
		{"GET", "/api/v1/jobs/" + waiting.ID, "/api/v1/jobs/{id}", "", 200},
		{"GET", "/api/v1/jobs/" + job.ID + "/events", "/api/v1/jobs/{id}/events", "", 200},
		{"GET", "/api/v1/jobs/" + job.ID + "/usage", "/api/v1/jobs/{id}/usage", "", 200},
		{"GET", "/api/v1/jobs/" + job.ID + "/slo", "/api/v1/jobs/{id}/slo", "", 200},
		{"GET", "/api/v1/usage", "", "", 200},
		{"GET", "/api/v1/slo", "", "", 200},
		{"GET", "/api/v1/gpus/health", "", "", 200},
		{"GET", "/api/v1/instances", "", "", 200},
		{"GET", "/api/v1/plan", "", "", 200},
		{"GET", "/api/v1/reconfigs", "", "", 200},
		{"GET", "/api/v1/kernelsched", "", "", 200},
		{"POST", "/api/v1/jobs/" + waiting.ID + "/cancel", "/api/v1/jobs/{id}/cancel", "", 200},
		{"GET", "/api/v1/jobs/" + jobs.NewID(fillTime.Add(time.Hour)), "/api/v1/jobs/{id}", "", 404},
	} {
		r := ts.do(t, tc.method, tc.path, tc.body)
		if r.code != tc.status {
			t.Errorf("%s %s = %d %s, want %d", tc.method, tc.path, r.code, r.body, tc.status)
			continue
		}
		doc := tc.doc
		if doc == "" {
			doc = tc.path
		}
		gaps, err := UndocumentedFields(tc.method, doc, tc.status, []byte(r.body))
		if err != nil {
			t.Error(err)
			continue
		}
		if len(gaps) > 0 {
			t.Errorf("%s %s answers fields its schema in openapi.json lacks: %s", tc.method, doc, strings.Join(gaps, ", "))
		}
	}
}

// fillNode gives the fake node a value with every field set (filled) of
// everything it answers: a running claim job and a pending job of mmk's
// (returned), the plan, the schedulers, a reconfiguration, the use, the
// latency and the health.
func fillNode(ts *testServer) (job, waiting jobs.Job) {
	job = filled[jobs.Job]()
	job.ID, job.State = jobs.NewID(fillTime), jobs.Running
	ts.node.Put(job)
	waiting = filled[jobs.Job]()
	waiting.ID, waiting.State = jobs.NewID(fillTime.Add(time.Millisecond)), jobs.Pending
	waiting.Spec.Claim, waiting.Grant = nil, nil // a job of mmk's, which a cancel ends
	ts.node.Put(waiting)
	ts.node.SetPlan(filled[node.PlanView]())
	ts.node.SetSchedulers(filled[[]node.SchedView]())
	ts.node.AddReconfig(filled[jobs.Reconfig]())
	usage := filled[node.UsageView]()
	usage.Jobs[0].ID = job.ID
	ts.node.SetUsage(usage)
	slo := filled[node.SLOView]()
	slo.Jobs[0].ID = job.ID
	ts.node.SetSLO(slo)
	health := filled[node.HealthView]()
	health.GPUs[0].History[0].At = fillTime.Add(time.Hour) // after any since
	ts.node.SetHealth(health)
	return job, waiting
}

// undocumentedAs lists the fields of data, JSON, that the document's
// schema component lacks.
func undocumentedAs(t *testing.T, component, data string) []string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatalf("%s: %v", component, err)
	}
	schema := resolve(doc, "#/components/schemas/"+component)
	if schema == nil {
		t.Fatalf("openapi.json has no schema %s", component)
	}
	return undocumented(doc, schema, v, "$")
}

// TestOpenAPIDocumentsStream: the stream's events (the dashboard's data)
// hold only fields of the schemas openapi.json names for them: the
// snapshot, then a plan, jobs and the schedulers as they change.
func TestOpenAPIDocumentsStream(t *testing.T) {
	ts, srv := streamServer(t, 5*time.Millisecond, time.Hour)
	fillNode(ts)
	c := openStream(t, srv, "")
	check := func(event, component string) {
		t.Helper()
		if gaps := undocumentedAs(t, component, c.next(t, event).data); len(gaps) > 0 {
			t.Errorf("the stream's %s event holds fields %s lacks: %s", event, component, strings.Join(gaps, ", "))
		}
	}
	check("snapshot", "StreamSnapshot")
	more := filled[jobs.Job]()
	more.ID = jobs.NewID(fillTime.Add(2 * time.Millisecond))
	ts.node.Put(more)
	check("jobs", "StreamJobs")
	p := filled[node.PlanView]()
	p.Decisions = 2
	ts.node.SetPlan(p)
	check("plan", "Plan")
	sv := filled[[]node.SchedView]()
	sv[0].Counters.Kernels = 2
	ts.node.SetSchedulers(sv)
	check("kernelsched", "StreamSchedulers")
}
