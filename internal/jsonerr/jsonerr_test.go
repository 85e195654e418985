package jsonerr

import (
	"encoding/json"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

func TestProblem(t *testing.T) {
	type args struct {
		Count int      `json:"count"`
		Rate  float64  `json:"rate"`
		Tags  []string `json:"tags"`
		On    bool     `json:"on"`
	}
	tests := []struct{ in, want string }{
		{`{"count":"x"}`, "/count must be a whole number, not a string"},
		{`{"count":1.5}`, "/count must be a whole number"},
		{`{"rate":true}`, "/rate must be a number, not a boolean"},
		{`{"tags":{}}`, "/tags must be an array, not an object"},
		{`{"on":null,"on":1}`, "/on is given twice"},
		{`{"colour":1}`, "/colour is not known"},
		{`[1]`, "must be an object"},
		{`{`, "malformed JSON"},
	}
	for _, tt := range tests {
		var v args
		err := jsonv2.Unmarshal([]byte(tt.in), &v, jsonv2.RejectUnknownMembers(true))
		if got := Problem(err); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.in, got, tt.want)
		}
	}
	// encoding/json's type errors name the field too.
	var v args
	if got := Problem(json.Unmarshal([]byte(`{"count":"x"}`), &v)); got != "/count has the wrong type" {
		t.Errorf("encoding/json: %q", got)
	}
}
