package check

import (
	"testing"

	"github.com/mcp-elicit/elicit/internal/docsindex"
)

// TestCaseTextsCiteDefinedIDs: every requirement id that a case's
// expectation prints (in elicit check's report and its --json) is defined
// in docs/requirements.md. The repository scan of internal/docsindex
// covers the ids written anywhere in the source; this covers the texts as
// the checker holds them.
func TestCaseTextsCiteDefinedIDs(t *testing.T) {
	root, err := docsindex.Root()
	if err != nil {
		t.Fatal(err)
	}
	ix, err := docsindex.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		for _, p := range ix.Check([]byte(c.expect)) {
			t.Errorf("case %s: %v", c.id, p)
		}
	}
}
