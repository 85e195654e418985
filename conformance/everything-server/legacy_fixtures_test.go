package main

import (
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
)

// TestLegacyFixtures runs the fixtures of the 2025-11-25 suite as MRTR
// handlers (the legacy bridge sends their input requests over a session;
// here they are answered as a 2026 client would): the question asked and
// the text the suite reads.
func TestLegacyFixtures(t *testing.T) {
	cases := []struct {
		tool, args, key, method string
		schema                  string // the requestedSchema asked, "" for sampling
		answer                  map[string]any
		want                    string
	}{
		{"test_sampling", `{"prompt":"Say hi"}`, "llm", mcp.MethodSamplingCreate, "", samplingAnswer,
			"LLM response: The capital of France is Paris."},
		{"test_elicitation", `{"message":"Who are you?"}`, "user_info", mcp.MethodElicitationCreate, string(schemaUserInfo),
			accept(`{"username":"testuser","email":"test@example.com"}`),
			`User response: action=accepted, content={"email":"test@example.com","username":"testuser"}`},
		{"test_elicitation_sep1034_defaults", `{}`, "defaults", mcp.MethodElicitationCreate, string(schemaDefaults),
			obj(`{"action":"decline"}`), "Elicitation completed: action=declined, content=null"},
		{"test_elicitation_sep1330_enums", `{}`, "enums", mcp.MethodElicitationCreate, string(schemaEnums),
			accept(`{"untitledSingle":"option1","titledSingle":"value1","legacyEnum":"opt1","untitledMulti":["option1","option2"],"titledMulti":["value1","value2"]}`),
			`Elicitation completed: action=accepted, content={"legacyEnum":"opt1","titledMulti":["value1","value2"],"titledSingle":"value1","untitledMulti":["option1","option2"],"untitledSingle":"option1"}`},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			c := newTester(t)
			args := map[string]any{"arguments": obj(tc.args)}
			reqs, state := c.tool(capsDefault, tc.tool, args).inputRequired(t)
			p := request(t, reqs, tc.key, tc.method)
			if tc.schema != "" {
				jsonEqual(t, p["requestedSchema"], tc.schema)
			}
			args["inputResponses"] = map[string]any{tc.key: tc.answer}
			args["requestState"] = state
			if got := text(t, c.tool(capsDefault, tc.tool, args).complete(t), 0); got != tc.want {
				t.Errorf("text = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLegacyFixturesNeedCapabilities: without sampling or elicitation the
// fixtures are refused with -32021, as the suite's notes ask ("return an
// error").
func TestLegacyFixturesNeedCapabilities(t *testing.T) {
	c := newTester(t)
	for tool, args := range map[string]string{"test_sampling": `{"prompt":"x"}`, "test_elicitation": `{"message":"y"}`} {
		if code := c.tool(capsNone, tool, map[string]any{"arguments": obj(args)}).errorCode(t); code != mcp.CodeMissingRequiredClientCapability {
			t.Errorf("%s without capabilities: error %d", tool, code)
		}
	}
}
