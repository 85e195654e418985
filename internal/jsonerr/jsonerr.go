// Package jsonerr words a JSON decoding error for a client: where decoding
// failed (the member's JSON Pointer) and what is wrong there, never the
// value found. mcpserver uses it for request params and for tool
// arguments, so both read alike.
package jsonerr

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Problem says where decoding failed and what is wrong there, e.g.
// "/count must be a whole number, not a string", "/colour is not known",
// "/name is given twice", or "malformed JSON".
func Problem(err error) string {
	ptr, problem := Locate(err)
	if ptr == "" {
		return problem
	}
	return ptr + " " + problem
}

// Locate splits a decoding error into the JSON Pointer of the member at
// fault ("" for the whole value) and the problem there: what it must be
// and the kind of value found, an unknown member, a member given twice.
func Locate(err error) (ptr, problem string) {
	var se *jsonv2.SemanticError
	var sx *jsontext.SyntacticError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se) && errors.Is(se.Err, jsonv2.ErrUnknownName):
		return string(se.JSONPointer), "is not known"
	case errors.As(err, &se) && se.GoType != nil:
		want := goKind(se.GoType)
		if se.JSONPointer == "" {
			return "", "must be " + want
		}
		if want == "a whole number" && se.JSONKind == '0' {
			return string(se.JSONPointer), "must be a whole number"
		}
		return string(se.JSONPointer), "must be " + want + ", not " + jsonKind(se.JSONKind)
	case errors.As(err, &sx) && errors.Is(sx.Err, jsontext.ErrDuplicateName):
		return string(sx.JSONPointer), "is given twice"
	case errors.As(err, &te):
		return "/" + strings.ReplaceAll(te.Field, ".", "/"), "has the wrong type"
	}
	return "", "malformed JSON"
}

// goKind says what JSON a Go type takes.
func goKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another kind of value"
}

// jsonKind names the kind of JSON value a jsontext.Kind starts.
func jsonKind(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "another kind of value"
}
