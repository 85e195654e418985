package docsindex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleIndex = `# Requirements

| Id | Level | Role | Rule | Spec page |
|---|---|---|---|---|
| RS-S-05 | SHOULD | server | Bind the state to the user. | basic/patterns/mrtr.mdx §Server Requirements |
| ELI-C-01 | MUST | client | Show who asks. | client/elicitation.mdx |
| ELICIT-ASK-01 | MUST NOT | server | No asking again after a refusal. | Design |
`

// moduleRoot is Root, failing the test when there is none.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func sample(t *testing.T) *Index {
	t.Helper()
	ix, err := ParseIndex([]byte(sampleIndex))
	if err != nil {
		t.Fatal(err)
	}
	ix.AddPage("protocol", []byte("# Protocol\n\n## Headers\n\n```\n## Not a heading\n```\n\n## MRTR echo rules\n"))
	return ix
}

func TestParseIndex(t *testing.T) {
	head := "| Id | Level | Role | Rule | Source |\n|---|---|---|---|---|\n"
	tests := []struct {
		name    string
		in      string
		ids     []string
		wantErr string
	}{
		{"sample", sampleIndex, []string{"ELI-C-01", "ELICIT-ASK-01", "RS-S-05"}, ""},
		{"defined twice", head + "| RS-S-05 | SHOULD | server | a | b |\n| RS-S-05 | MUST | server | c | d |\n", nil, "RS-S-05 is defined twice"},
		{"empty rule", head + "| RS-S-05 | SHOULD | server |  | b |\n", nil, "RS-S-05 has an empty rule"},
		{"missing source cell", head + "| RS-S-05 | SHOULD | server | a |\n", nil, "has 3 cells after the id"},
		{"no ids at all", "# Nothing\n\n| Id | Level |\n|---|---|\n", nil, "no requirement ids defined"},
		{"prose mention defines nothing", "RS-S-05 is mentioned here.\n" + head + "| ERR-01 | MUST | both | a | b |\n", []string{"ERR-01"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := ParseIndex([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(ix.IDs(), ","); got != strings.Join(tt.ids, ",") {
				t.Errorf("ids = %s, want %s", got, strings.Join(tt.ids, ","))
			}
		})
	}
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Headers":                             "headers",
		"2025-11-25 clients":                  "2025-11-25-clients",
		"Checking a server: `elicit check`":   "checking-a-server-elicit-check",
		"Multi-step operations (ELICIT-STEP)": "multi-step-operations-elicit-step",
		"export_report and send_report":       "export_report-and-send_report",
		"Responses: JSON and SSE":             "responses-json-and-sse",
	} {
		if got := Slug(h); got != want {
			t.Errorf("Slug(%q) = %q, want %q", h, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	ix := sample(t)
	// Forbidden references are assembled here so that this file does not
	// contain them itself.
	digest := "wire" + ".md"
	page := "protocol" + ".md" // the sample page, not the real one
	tests := []struct {
		name string
		in   string
		want []string // Problem.Text of each problem, in order
	}{
		{"defined ids", "// RS-S-05 and ELI-C-01 hold; ELICIT-ASK-01 too.", nil},
		{"undefined spec id", "// see RS-S-" + "99 for why", []string{"RS-S-" + "99"}},
		{"undefined project id", `return fmt.Errorf("ELICIT-ASK-02: no")`, []string{"ELICIT-ASK-02"}},
		{"two on one line, one bad", "(RS-S-05, MRTR-S-07)", []string{"MRTR-S-07"}},
		{"not an id", "UTF-16 surrogates, SHA-256, RFC 9110, AES-256-GCM, P-256, ELICIT-<AREA>-NN", nil},
		{"defined family", "ELI-C-* rules", nil},
		{"undefined family", "SEC-U-C-* rules", []string{"SEC-U-C-*"}},
		{"family prefix", "the ELICIT-* rules, RS-* too", nil},
		{"no such prefix", "the MRTR-* rules", []string{"MRTR-*"}},
		{"digest file", "// (" + digest + " §9.6)", []string{digest}},
		{"section of the old index", "// (requirements" + ".md §7)", []string{"requirements" + ".md §"}},
		{"relative path out", "see .." + "/shared" + "/spec", []string{".." + "/shared", "shared" + "/spec"}},
		{"shared folder", "	shared" + "/conformance/run server", []string{"shared" + "/conformance"}},
		{"numbered source document", "// (seed" + " 002, row 3)", []string{"seed" + " 002"}},
		{"source document, other spelling", "the Seed-" + "000 curl tests", []string{"Seed-" + "000"}},
		{"source folder", "in seeds" + "/003_x.txt", []string{"seeds" + "/"}},
		{"seed of a fuzz corpus is fine", "// A genuine sign-in, to seed the corpus.", nil},
		{"existing section", "// docs/" + page + " §Headers: names", nil},
		{"existing longer section", "see " + page + " §MRTR echo rules.", nil},
		{"missing section", "// docs/" + page + " §Header names", []string{"docs/" + page + " §Header names"}},
		{"section name runs on into the next comment line", "// see docs/" + page + " §MRTR echo\n// rules, and more", nil},
		{"section name that does not run on", "// see docs/" + page + " §MRTR\n// nothing", []string{"docs/" + page + " §MRTR"}},
		{"link to a heading", "see [headers](" + page + "#headers) and [x](docs/" + page + "#mrtr-echo-rules)", nil},
		{"link to a missing heading", "see [headers](" + page + "#header-names)", []string{"](" + page + "#header-names)"}},
		{"link to another site", "[spec](https://example.com/x.md#anything)", nil},
		{"heading inside a code fence", "// docs/" + page + " §Not a heading", []string{"docs/" + page + " §Not a heading"}},
		{"not a docs page", "BENCHMARKS.md §Targets and client/elicitation.mdx §URL Mode", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := ix.Check([]byte(tt.in))
			var got []string
			for _, p := range ps {
				got = append(got, p.Text)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("problems = %q, want %q\n%v", got, tt.want, ps)
			}
		})
	}
}

// TestRepository holds every .go and .md file of the module (and the CI
// and helper scripts) to the index: an id that docs/requirements.md does
// not define, a docs section that does not exist, or a reference out of
// the repository fails here with file:line.
func TestRepository(t *testing.T) {
	root := moduleRoot(t)
	ix, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		seen[f] = true
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		page := ""
		if strings.HasSuffix(f, ".md") {
			page = strings.TrimSuffix(filepath.Base(f), ".md")
		}
		for _, p := range ix.CheckPage(page, b) {
			t.Errorf("%s:%v", f, p)
		}
	}
	// The walk must really have covered the code, the docs and the index.
	for _, f := range []string{"README.md", IndexPath, "docs/protocol.md", "mcpserver/mrtr.go", "check/run.go", "internal/docsindex/docsindex.go"} {
		if !seen[f] {
			t.Errorf("%s was not scanned", f)
		}
	}
}
