package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Load reads the config file at path and returns Default() with the file's
// values over it, validated. A file that cannot be read is an *os.PathError
// wrapped with "config: "; anything wrong with its content is an *Error that
// names the key and its line (see Parse).
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return Parse(data, path)
}

// Parse is Load for text already read; filename is used in messages only. It is
// strict: a syntax error, an unknown section or key, a value of the wrong type
// or one that Validate refuses is an *Error whose Error() is one line:
//
//	config.toml:4: syntax error: expected value but found '\n' instead
//	config.toml:12: unknown key "server.colour" (known keys in [server]: name, motd, ...)
//	config.toml:3: server.port: expected an integer, got a string
//	config.toml:7: server.port = 70000: must be 0..65535
//
// The first problem in the file's order is reported (Validate's problems come
// after the file's structure is known to be sound, in section order).
func Parse(data []byte, filename string) (Config, error) {
	c, err := decode(data, filename)
	if err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// decode checks the file's structure and types against the schema and sets the
// values it holds over Default(); it does not check ranges.
func decode(data []byte, file string) (Config, error) {
	lines := locateKeys(data)
	var raw map[string]any
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return Config{}, syntaxError(err, file, lines)
	}
	for _, key := range md.Keys() {
		if msg, errKey := checkKey(key, raw); msg != "" {
			return Config{}, &Error{File: file, Line: lines.LineOf(key), Key: errKey, Msg: msg}
		}
	}
	c := Default()
	c.origin = &origin{file: file, loaded: true, fromFile: map[string]int{}}
	sections := reflect.ValueOf(&c).Elem()
	for _, sec := range schema {
		table, _ := raw[sec.key].(map[string]any)
		for _, f := range sec.fields {
			if v, ok := table[f.key]; ok {
				f.set(sections.Field(sec.index).Field(f.index), v)
				key := toml.Key{sec.key, f.key}
				c.origin.fromFile[key.String()] = lines.LineOf(key)
				if entries, isTable := v.(map[string]any); isTable {
					for name := range entries {
						entry := toml.Key{sec.key, f.key, name}
						c.origin.fromFile[entry.String()] = lines.LineOf(entry)
					}
				}
			}
		}
	}
	return c, nil
}

// syntaxError turns the decoder's error into an *Error. The decoder's last key
// is named only when it stands on the error's line; otherwise it would point
// at a key the problem merely follows.
func syntaxError(err error, file string, lines keyLines) error {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return &Error{File: file, Msg: "syntax error: " + oneLine(err.Error())}
	}
	e := &Error{File: file, Line: pe.Position.Line, Msg: "syntax error: " + oneLine(pe.Message)}
	if pe.LastKey != "" && lines[pe.LastKey] == e.Line {
		e.Key = pe.LastKey
		e.Msg = pe.LastKey + ": " + e.Msg
	}
	return e
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkKey checks one key the file defines against the schema. It returns ""
// when the key is known and its value has the right type; otherwise the
// message and the key it is about.
func checkKey(key toml.Key, raw map[string]any) (msg, errKey string) {
	sec, known := sectionNamed(key[0])
	top := key[:1].String()
	if !known {
		switch raw[key[0]].(type) {
		case map[string]any, []map[string]any:
			return fmt.Sprintf("unknown section [%s] (known sections: %s)", top, sectionList()), top
		}
		return fmt.Sprintf("unknown key %q outside any section (known sections: %s)", top, sectionList()), top
	}
	table, isTable := raw[key[0]].(map[string]any)
	if !isTable {
		return fmt.Sprintf("%s: expected a table, got %s", top, tomlType(raw[key[0]])), top
	}
	if len(key) == 1 {
		return "", ""
	}
	name := key[:2].String()
	f, known := sec.fieldNamed(key[1])
	if why, removed := removedKeys[name]; removed && !known {
		return name + " was removed: " + why, name
	}
	if !known {
		return fmt.Sprintf("unknown key %q (known keys in [%s]: %s)", name, top, sec.fieldList()), name
	}
	if entries, isTable := table[key[1]].(map[string]any); isTable && len(key) > 2 && f.kind == kindStringMap {
		// One entry of a table of strings, such as modules.sha256."plugins/ctf";
		// the decoder lists each entry as a key of its own, on its own line.
		entry := key[:3].String()
		if v := entries[key[2]]; !isString(v) {
			return entry + ": expected a string, got " + tomlType(v), entry
		}
		return "", ""
	}
	if where, problem := f.typeError(table[key[1]]); problem != "" {
		return name + where + ": " + problem, name
	}
	return "", ""
}

// removedKeys are keys an earlier release knew, with what replaced them: a
// config that still sets one is refused with that, not as an unknown key.
var removedKeys = map[string]string{
	"modules.tick_deadline": "the server no longer kills a Go plugin for one slow tick. " +
		"It waits for a plugin's answer modules.tick_budget_fraction of the tick (a later answer applies at a later tick) " +
		"and kills only a plugin that leaves a call unanswered for modules.plugin_hang_timeout seconds (default 10); delete the line",
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// valueKind is the Go type of a schema field, which fixes the TOML types it
// accepts.
type valueKind uint8

const (
	kindInt       valueKind = iota // TOML integer
	kindFloat                      // TOML float or integer
	kindString                     // TOML string
	kindBool                       // TOML boolean
	kindStrings                    // TOML array of strings
	kindStringMap                  // TOML table of strings (a sub-table); its entries are checked one by one
)

var kindWants = [...]string{"an integer", "a number", "a string", "a boolean", "an array of strings", "a table of strings"}

type fieldSchema struct {
	key   string // toml tag
	index int    // field index in its section struct
	kind  valueKind
}

type sectionSchema struct {
	key    string // toml tag
	index  int    // field index in Config
	fields []fieldSchema
}

// schema is Config's layout as config.toml spells it, read from the toml tags
// so that the struct stays the one place a key is declared.
var schema = buildSchema(reflect.TypeFor[Config]())

func buildSchema(t reflect.Type) []sectionSchema {
	var sections []sectionSchema
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		sec := sectionSchema{key: sf.Tag.Get("toml"), index: i}
		for j := range sf.Type.NumField() {
			ff := sf.Type.Field(j)
			sec.fields = append(sec.fields, fieldSchema{key: ff.Tag.Get("toml"), index: j, kind: kindOf(ff.Type)})
		}
		sections = append(sections, sec)
	}
	return sections
}

func kindOf(t reflect.Type) valueKind {
	switch {
	case t.Kind() == reflect.Int:
		return kindInt
	case t.Kind() == reflect.Float64:
		return kindFloat
	case t.Kind() == reflect.String:
		return kindString
	case t.Kind() == reflect.Bool:
		return kindBool
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return kindStrings
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String:
		return kindStringMap
	}
	panic("config: no TOML mapping for field type " + t.String())
}

func sectionNamed(key string) (sectionSchema, bool) {
	for _, s := range schema {
		if s.key == key {
			return s, true
		}
	}
	return sectionSchema{}, false
}

func sectionList() string {
	names := make([]string, len(schema))
	for i, s := range schema {
		names[i] = s.key
	}
	return strings.Join(names, ", ")
}

func (s sectionSchema) fieldNamed(key string) (fieldSchema, bool) {
	for _, f := range s.fields {
		if f.key == key {
			return f, true
		}
	}
	return fieldSchema{}, false
}

func (s sectionSchema) fieldList() string {
	names := make([]string, len(s.fields))
	for i, f := range s.fields {
		names[i] = f.key
	}
	return strings.Join(names, ", ")
}

// typeError returns "" if v, a decoded TOML value, fits the field. Otherwise
// it returns where inside the value the problem is ("" or "[i]" for an array
// element) and what it is.
func (f fieldSchema) typeError(v any) (where, problem string) {
	ok := false
	switch n := v.(type) {
	case int64:
		ok = f.kind == kindFloat || f.kind == kindInt
		if f.kind == kindInt && int64(int(n)) != n {
			return "", fmt.Sprintf("%d does not fit in an integer of %d bits", n, strconv.IntSize)
		}
	case float64:
		ok = f.kind == kindFloat
	case string:
		ok = f.kind == kindString
	case bool:
		ok = f.kind == kindBool
	case []any:
		if f.kind != kindStrings {
			break
		}
		for i, e := range n {
			if _, isString := e.(string); !isString {
				return fmt.Sprintf("[%d]", i), "expected a string, got " + tomlType(e)
			}
		}
		ok = true
	case map[string]any:
		ok = f.kind == kindStringMap // the entries are checked as keys of their own
	}
	if ok {
		return "", ""
	}
	return "", "expected " + kindWants[f.kind] + ", got " + tomlType(v)
}

// set stores v, already checked by typeError (and a table's entries by
// checkKey), into dst.
func (f fieldSchema) set(dst reflect.Value, v any) {
	switch f.kind {
	case kindInt:
		dst.SetInt(v.(int64))
	case kindFloat:
		if n, isInt := v.(int64); isInt {
			dst.SetFloat(float64(n))
		} else {
			dst.SetFloat(v.(float64))
		}
	case kindString:
		dst.SetString(v.(string))
	case kindBool:
		dst.SetBool(v.(bool))
	case kindStrings:
		list := v.([]any)
		s := make([]string, len(list))
		for i, e := range list {
			s[i] = e.(string)
		}
		dst.Set(reflect.ValueOf(s))
	case kindStringMap:
		entries := v.(map[string]any)
		m := make(map[string]string, len(entries))
		for k, e := range entries {
			m[k] = e.(string)
		}
		dst.Set(reflect.ValueOf(m))
	}
}

// tomlType names the TOML type of a decoded value, with its article.
func tomlType(v any) string {
	switch v.(type) {
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	}
	return "a date or time"
}
