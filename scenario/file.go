package scenario

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/lockharness/lockharness/checker"

	"github.com/lockharness/lockharness/internal/shell"
	"github.com/lockharness/lockharness/internal/suggest"
)

// A scenario file is one catalog entry as TOML: the row's words (name,
// source, story, expect, compare) and a [spec] table whose keys are
// results.json's spec keys, the flags of `harness run` with _ for -. What a
// file leaves out is Defaults(). The built-in catalog is such files,
// embedded from catalog/ (their names' numbers keep its order); users
// keep theirs beside their code and run them by path.
//
// In worker_cmd and write_sql, {repo} stands for the harness's checkout
// (its reference workers) and {dir} for the file's own directory.

//go:embed catalog/*.toml
var catalogFiles embed.FS

// scenarioFile is a scenario file as it decodes.
type scenarioFile struct {
	Name   string `toml:"name"`
	Source string `toml:"source"`
	// SourceURL links the public report the row reproduces.
	SourceURL string `toml:"source_url"`
	Story     string `toml:"story"`
	Expect    string `toml:"expect"`
	Compare   string `toml:"compare"`
	// Remedy: this (safe) row shows the remedy of a cause of an unsafe
	// row's anomaly, which pages then name beside that cause.
	Remedy *RemedyOf `toml:"remedy"`
	Spec   Spec      `toml:"spec"`
}

// ScenarioExt is how a scenario file's name ends.
const ScenarioExt = ".toml"

// ParseScenario reads a scenario file's text; name is how errors call the
// file, dir is where {dir} points. A file that does not decode, names a
// field that does not exist, or asks for a spec the harness cannot run is
// refused with the line and the field.
func ParseScenario(name, dir string, data []byte) (Entry, error) {
	f := scenarioFile{Spec: Defaults()}
	d := toml.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return Entry{}, decodeError(name, err)
	}
	if err := durationsAreStrings(name, data); err != nil {
		return Entry{}, err
	}
	at := func(key string) string { return name + lineOf(data, key) }
	if f.Name == "" {
		return Entry{}, fmt.Errorf("%s: no name: a scenario file starts with name = \"...\"", name)
	}
	if !validName.MatchString(f.Name) {
		return Entry{}, fmt.Errorf("%s: name %q: lower-case letters, digits and - only, as a run directory is named", at("name"), f.Name)
	}
	expect, err := ParseExpect(f.Expect)
	if err != nil {
		return Entry{}, fmt.Errorf("%s: expect: %w", at("expect"), err)
	}
	f.Spec.WorkerCmd = expandPaths(f.Spec.WorkerCmd, dir, shell.Quote)
	f.Spec.WriteSQL = expandPaths(f.Spec.WriteSQL, dir, func(p string) string { return p })
	if f.SourceURL != "" {
		if u, err := url.Parse(f.SourceURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return Entry{}, fmt.Errorf("%s: source_url %q: want an http(s) link to the report the row reproduces", at("source_url"), f.SourceURL)
		}
	}
	e := Entry{Name: f.Name, Source: f.Source, SourceURL: f.SourceURL, Story: f.Story, Spec: f.Spec, Expect: expect, Compare: f.Compare, Remedy: f.Remedy}
	e.Spec.Name = f.Name
	if r := f.Remedy; r != nil {
		if err := r.check(expect); err != nil {
			return Entry{}, fmt.Errorf("%s: remedy: %w", at("remedy"), err)
		}
	}
	return e, nil
}

// checkScenario refuses a parsed file whose spec the harness cannot run,
// naming the line of the field at fault. It resolves the spec, which for
// an outside worker starts it once to read its ready line.
func checkScenario(e Entry, name string, data []byte) error {
	if err := e.Spec.Validate(); err != nil {
		return fmt.Errorf("%s: %w", specErrorAt(name, data, err), err)
	}
	return nil
}

// placedPath is a path a scenario file writes from the harness's checkout
// or from the file's own directory.
var placedPath = regexp.MustCompile(`\{(repo|dir)\}/(\S+)`)

// expandPaths resolves {repo}/PATH (a file of the harness's checkout, found
// as its reference workers are) and {dir}/PATH (beside the scenario file)
// in s, each written by quote.
func expandPaths(s, dir string, quote func(string) string) string {
	return placedPath.ReplaceAllStringFunc(s, func(m string) string {
		parts := placedPath.FindStringSubmatch(m)
		if parts[1] == "repo" {
			return quote(repoFile(parts[2]))
		}
		return quote(filepath.Join(dir, parts[2]))
	})
}

// durationsAreStrings refuses a duration written as a number: Duration is
// a count of nanoseconds, and the decoder would take hold = 1 as 1 ns.
func durationsAreStrings(name string, data []byte) error {
	var doc struct {
		Spec map[string]any `toml:"spec"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		return decodeError(name, err)
	}
	if err := stringDurations(name, data, "spec.", doc.Spec, reflect.TypeOf(Spec{})); err != nil {
		return err
	}
	steps, _ := doc.Spec["schedule"].([]any)
	for i, st := range steps {
		if table, ok := st.(map[string]any); ok {
			// Step i's keys are found after its own [[spec.schedule]].
			from := nthIndex(data, []byte("[[spec.schedule]]"), i+1)
			if err := stringDurations(name, data[from:], "spec.schedule.", table, reflect.TypeOf(Step{})); err != nil {
				if at := bytes.Count(data[:from], []byte("\n")); at > 0 {
					err = shiftLine(err, name, at)
				}
				return err
			}
		}
	}
	return nil
}

// nthIndex is where the nth sep is in data (0 when there are fewer).
func nthIndex(data, sep []byte, n int) int {
	at := 0
	for range n {
		i := bytes.Index(data[at:], sep)
		if i < 0 {
			return 0
		}
		at += i + len(sep)
	}
	return at
}

// shiftLine moves the line an error of stringDurations names, found in
// data after its first lines, to its line in the whole file.
func shiftLine(err error, name string, lines int) error {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, name+":")
	n := 0
	if k, _ := fmt.Sscanf(rest, "%d", &n); !ok || k != 1 {
		return err
	}
	return fmt.Errorf("%s:%d%s", name, n+lines, strings.TrimPrefix(rest, fmt.Sprint(n)))
}

// stringDurations refuses a number where table, decoded as t, has a
// Duration field.
func stringDurations(name string, data []byte, prefix string, table map[string]any, t reflect.Type) error {
	for i := range t.NumField() {
		key := t.Field(i).Tag.Get("toml")
		ft := t.Field(i).Type
		if v, ok := table[key]; ok && (ft == reflect.TypeOf(Duration(0)) || ft == reflect.TypeOf((*Duration)(nil))) {
			if _, isString := v.(string); !isString {
				return fmt.Errorf("%s%s: field %s%s: a duration is a string such as \"1.5s\", got %v", name, lineOf(data, key), prefix, key, v)
			}
		}
	}
	return nil
}

// validName is what a scenario may be called.
var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// ReadScenario reads a scenario file, and refuses one whose spec the
// harness cannot run (checkScenario).
func ReadScenario(file string) (Entry, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Entry{}, err
	}
	e, err := parseScenarioFile(file, data)
	if err != nil {
		return Entry{}, err
	}
	return e, checkScenario(e, file, data)
}

// parseScenarioFile is ParseScenario for a file on disk, whose {dir} is its
// directory made absolute: a worker beside it is found from anywhere. A
// user's scenario may not take a catalog entry's name: their runs would
// share a store directory, and repro's rates would mix them.
func parseScenarioFile(file string, data []byte) (Entry, error) {
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return Entry{}, err
	}
	e, err := ParseScenario(file, dir, data)
	if err != nil {
		return Entry{}, err
	}
	if _, taken := Lookup(e.Name); taken == nil {
		return Entry{}, fmt.Errorf("%s%s: name %q is a catalog scenario's; give yours a name of its own", file, lineOf(data, "name"), e.Name)
	}
	return e, nil
}

// ListScenarioDir reads the scenario files in dir as ReadScenarioDir does,
// without resolving their specs (which starts an outside worker): what
// `harness list` shows.
func ListScenarioDir(dir string) ([]Entry, error) { return readDir(dir, false) }

// ReadScenarioDir reads every scenario file in dir, in name order; two of
// the same name are refused.
func ReadScenarioDir(dir string) ([]Entry, error) { return readDir(dir, true) }

func readDir(dir string, check bool) ([]Entry, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*"+ScenarioExt))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no scenario files (*%s)", dir, ScenarioExt)
	}
	sort.Strings(files)
	var out []Entry
	where := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		e, err := parseScenarioFile(f, data)
		if err == nil && check {
			err = checkScenario(e, f, data)
		}
		if err != nil {
			return nil, err
		}
		if other, ok := where[e.Name]; ok {
			return nil, fmt.Errorf("%s: scenario %q is also %s", f, e.Name, other)
		}
		where[e.Name] = f
		out = append(out, e)
	}
	return out, nil
}

// IsScenarioFile reports whether arg names a scenario file rather than a
// catalog entry.
func IsScenarioFile(arg string) bool {
	return strings.HasSuffix(arg, ScenarioExt) || strings.ContainsRune(arg, filepath.Separator)
}

// LookupOrRead is Lookup for a catalog name, ReadScenario for a file.
func LookupOrRead(arg string) (Entry, error) {
	if IsScenarioFile(arg) {
		return ReadScenario(arg)
	}
	return Lookup(arg)
}

// loadCatalog reads the embedded catalog files, in their order.
func loadCatalog() []Entry {
	names, err := fs.Glob(catalogFiles, "catalog/*"+ScenarioExt)
	if err != nil {
		panic(err)
	}
	sort.Strings(names)
	var out []Entry
	for _, n := range names {
		data, err := catalogFiles.ReadFile(n)
		if err != nil {
			panic(err)
		}
		e, err := ParseScenario("scenario/"+n, path.Dir(n), data)
		if err != nil {
			// The catalog is part of the binary: a test reads it too.
			panic(err)
		}
		out = append(out, e)
	}
	return out
}

// ParseExpect reads an expectation as Expect.String writes it: safe,
// unsafe, unsafe: ANOMALY, or safe: fencing.rejected >= 1, refused-write 0
// (the second wave's "safe: fencing.rejected >= 1" means the same: a
// refused write makes a run invalid, so no safe run has one).
func ParseExpect(s string) (Expect, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "safe":
		return Expect{}, nil
	case s == "unsafe":
		return Expect{Unsafe: true}, nil
	case s == (Expect{Fenced: true}).String(), s == fencedBefore:
		return Expect{Fenced: true}, nil
	}
	if a, ok := strings.CutPrefix(s, "unsafe: "); ok {
		for _, name := range checker.AnomalyNames {
			if a == name {
				return Expect{Unsafe: true, Anomaly: a}, nil
			}
		}
		return Expect{}, suggest.Unknown("anomaly", a, checker.AnomalyNames, "")
	}
	return Expect{}, fmt.Errorf("%q is no expectation (valid: safe, unsafe, unsafe: ANOMALY, %s)", s, Expect{Fenced: true})
}

// decodeError names the line and field a TOML decoder refused.
func decodeError(name string, err error) error {
	var missing *toml.StrictMissingError
	if errors.As(err, &missing) && len(missing.Errors) > 0 {
		var msgs []string
		for _, e := range missing.Errors {
			row, _ := e.Position()
			key := e.Key()
			fields := fieldsOf(key)
			msgs = append(msgs, fmt.Sprintf("%s:%d: unknown field %s (%svalid%s: %s)", name, row,
				strings.Join(key, "."), suggest.DidYouMean(key[len(key)-1], fields), tableWord(key), strings.Join(fields, ", ")))
		}
		return errors.New(strings.Join(msgs, "\n"))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		field := ""
		if k := de.Key(); len(k) > 0 {
			field = " field " + strings.Join(k, ".") + ":"
		}
		return fmt.Errorf("%s:%d:%d:%s %s", name, row, col, field, strings.TrimPrefix(de.Error(), "toml: "))
	}
	return fmt.Errorf("%s: %w", name, err)
}

// tableWord says where the valid fields of a key are.
func tableWord(key []string) string {
	if len(key) > 1 {
		return " in [" + strings.Join(key[:len(key)-1], ".") + "]"
	}
	return " at the top"
}

// fieldsOf lists the fields a key's table may have.
func fieldsOf(key []string) []string {
	t := reflect.TypeOf(scenarioFile{})
	inSpec := len(key) > 1 && key[0] == "spec"
	if inSpec {
		t = reflect.TypeOf(Spec{})
	}
	var names []string
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("toml")
		if tag == "" || tag == "-" {
			continue
		}
		names = append(names, tag)
	}
	return names
}

// lineOf is ":N", the line where key is set in a scenario file, or "" if
// it is not.
func lineOf(data []byte, key string) string {
	re := regexp.MustCompile(`^\s*` + regexp.QuoteMeta(key) + `\s*=`)
	for i, l := range strings.Split(string(data), "\n") {
		if re.MatchString(l) {
			return fmt.Sprintf(":%d", i+1)
		}
	}
	return ""
}

// specErrorAt points a spec's refusal at the line of the field it names:
// the field whose flag it names (--worker-cmd), or else the first field of
// the [spec] table whose value it quotes.
func specErrorAt(name string, data []byte, err error) string {
	msg := err.Error()
	for _, m := range flagName.FindAllStringSubmatch(msg, -1) {
		key := strings.ReplaceAll(m[1], "-", "_")
		if at := lineOf(data, key); at != "" {
			return name + at + ": field spec." + key
		}
	}
	t := reflect.TypeOf(Spec{})
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		if key := t.Field(i).Tag.Get("toml"); key != "-" && lineOf(data, key) != "" {
			keys = append(keys, key)
		}
	}
	for _, key := range keys {
		at := lineOf(data, key)
		if v := valueOn(data, at); v != "" && strings.Contains(msg, `"`+v+`"`) {
			return name + at + ": field spec." + key
		}
	}
	// "lock redlock does not run on ...", "clients must be ...": the
	// field is the error's word.
	for _, key := range keys {
		word := regexp.MustCompile(`(^|[^a-z_-])` + regexp.QuoteMeta(strings.ReplaceAll(key, "_", "-")) + `([^a-z_-]|$)`)
		if word.MatchString(msg) {
			return name + lineOf(data, key) + ": field spec." + key
		}
	}
	return name + ": [spec]"
}

// flagName finds a flag an error names.
var flagName = regexp.MustCompile(`--([a-z][a-z-]*)`)

// valueOn is the value set on line at (":N") of data, unquoted.
func valueOn(data []byte, at string) string {
	var n int
	fmt.Sscanf(at, ":%d", &n)
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	_, v, _ := strings.Cut(lines[n-1], "=")
	v = strings.TrimSpace(v)
	if q := v[:min(1, len(v))]; q == `"` || q == "'" {
		if end := strings.Index(v[1:], q); end >= 0 {
			return v[1 : end+1]
		}
	}
	v, _, _ = strings.Cut(v, "#") // a comment after a bare value
	return strings.TrimSpace(v)
}

// FormatScenario writes an entry as a scenario file that ParseScenario
// reads back as the same entry: the row's words, then in [spec] every
// field that is not Defaults()'s, then the schedule's steps, if any. header
// is written first, as comments.
func FormatScenario(e Entry, header string) ([]byte, error) {
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if line != "" {
			fmt.Fprintf(&b, "# %s\n", line)
		}
	}
	put := func(key string, v any) error {
		out, err := toml.Marshal(map[string]any{key: v})
		b.Write(out)
		return err
	}
	var errs []error
	for _, kv := range []struct{ k, v string }{{"name", e.Name}, {"source", e.Source}, {"source_url", e.SourceURL}, {"story", e.Story}, {"expect", e.Expect.String()}, {"compare", e.Compare}} {
		if kv.v != "" {
			errs = append(errs, put(kv.k, kv.v))
		}
	}
	b.WriteString("\n[spec]\n")
	spec, def := reflect.ValueOf(e.Spec), reflect.ValueOf(Defaults())
	for i := range spec.NumField() {
		key := spec.Type().Field(i).Tag.Get("toml")
		v := spec.Field(i)
		if key == "-" || key == "schedule" || reflect.DeepEqual(v.Interface(), def.Field(i).Interface()) {
			continue
		}
		if d, ok := v.Interface().(Duration); ok {
			errs = append(errs, put(key, d.String()))
		} else {
			errs = append(errs, put(key, v.Interface()))
		}
	}
	for _, st := range e.Spec.Schedule {
		b.WriteString("\n[[spec.schedule]]\n")
		errs = append(errs, put("fault", st.Fault), put("at", st.At.String()))
		if st.AfterGrant != nil {
			errs = append(errs, put("after_grant", st.AfterGrant.String()))
		}
		if st.AfterPromotion != nil {
			errs = append(errs, put("after_promotion", st.AfterPromotion.String()))
		}
	}
	return b.Bytes(), errors.Join(errs...)
}
