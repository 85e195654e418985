package mcp_test

import (
	"testing"

	"github.com/mcp-elicit/elicit/mcp"
)

func TestServes(t *testing.T) {
	none := &mcp.ServerCapabilities{}
	all := &mcp.ServerCapabilities{Tools: &mcp.ListChangedCapability{}, Prompts: &mcp.ListChangedCapability{},
		Resources: &mcp.ResourcesCapability{}, Completions: &mcp.Empty{}}
	for _, tc := range []struct {
		method    string
		none, all bool
	}{
		{mcp.MethodDiscover, true, true},
		{mcp.MethodToolsList, false, true},
		{mcp.MethodToolsCall, false, true},
		{mcp.MethodPromptsList, false, true},
		{mcp.MethodPromptsGet, false, true},
		{mcp.MethodResourcesList, false, true},
		{mcp.MethodResourcesRead, false, true},
		{mcp.MethodResourceTemplatesList, false, true},
		{mcp.MethodCompletionComplete, false, true},
		{mcp.MethodTasksGet, false, false}, // the extension decides
		{"no/such", false, false},
	} {
		if got := none.Serves(tc.method); got != tc.none {
			t.Errorf("no capabilities: Serves(%s) = %v", tc.method, got)
		}
		if got := all.Serves(tc.method); got != tc.all {
			t.Errorf("all capabilities: Serves(%s) = %v", tc.method, got)
		}
	}
}
