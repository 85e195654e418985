// Package docsindex keeps the repository's references honest. It reads the
// requirements index (docs/requirements.md) and the section headings of
// every docs/*.md page, and finds in any text:
//
//   - requirement ids (MRTR-S-07, ELICIT-ASK-01, …) that the index does not
//     define, and id families written with a wildcard (ELI-C-*) of which it
//     defines no member;
//   - references to a docs page section ("docs/protocol.md §Headers") that
//     has no such heading;
//   - references that lead out of the repository: to the spec digest files
//     and source documents the project was started from, which a newcomer
//     who clones the repository does not have.
//
// Its tests run Check over every .go and .md file of the module, so an
// undefined id or a dangling reference fails `go test ./...`.
package docsindex

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// IndexPath is the requirements index, relative to the module root.
const IndexPath = "docs/requirements.md"

var (
	// idPattern matches a requirement id: an upper-case family of one to
	// four dash-separated parts and a two-digit number (RS-S-05,
	// SEC-U-C-06, SAMP-01, ELICIT-STATE-01).
	idPattern = regexp.MustCompile(`\b[A-Z]{2,6}(?:-[A-Z]{1,5}){0,3}-[0-9]{2}\b`)
	// familyPattern matches a wildcard over a family of ids (ELI-C-*).
	familyPattern = regexp.MustCompile(`\b([A-Z]{2,6}(?:-[A-Z]{1,5}){0,3})-\*`)
	// rowPattern matches a row of an index table: | ID | level | role | rule | source |
	rowPattern = regexp.MustCompile(`^\|\s*([A-Z][A-Z0-9-]+)\s*\|(.*)\|\s*$`)
	// sectionRef matches a reference to a section of a docs page: the
	// page name, optionally under docs/, ".md", a space and a section sign.
	sectionRef = regexp.MustCompile(`\b(?:docs/)?([a-z][a-z0-9-]*)\.md §`)
	// anchorLink matches a Markdown link to a heading: [text](page.md#frag)
	// or [text](#frag).
	anchorLink = regexp.MustCompile(`\]\(((?:[^()#\s]*/)?([A-Za-z0-9_-]+)\.md)?#([^()\s]+)\)`)
)

// notIDs are upper-case tokens that look like ids but are not.
var notIDs = map[string]bool{"UTF-16": true, "UTF-32": true}

// forbidden are references that point out of the repository. The
// patterns are spelt with escapes so that this file does not match them.
var forbidden = []struct {
	re   *regexp.Regexp
	why  string
	hint string
}{
	{regexp.MustCompile(`wire\.md`), "refers to a spec digest file the repository does not have", "cite a section of docs/protocol.md by its heading"},
	{regexp.MustCompile(`requirements\.md §`), "cites the requirements by section", "cite the requirement id; docs/requirements.md defines it"},
	{regexp.MustCompile(`\.\./shared`), "points out of the repository", "cite docs/ or the spec page"},
	{regexp.MustCompile(`\bshared/(?:spec|seeds|design|conformance|interop)\b`), "points out of the repository", "cite docs/, scripts/ or the spec page"},
	{regexp.MustCompile(`(?i)\bseed\W{0,2}0[0-9][0-9]|\bseeds[/]`), "cites a source document the repository does not have", "cite docs/flows.md or a project rule id (ELICIT-…)"},
}

// Index is what the docs define: requirement ids and page headings.
type Index struct {
	ids      map[string]bool
	families map[string]bool
	headings map[string][]string // page name (without .md) → headings
}

// Load reads the index and the headings of docs/*.md under the module root.
func Load(root string) (*Index, error) {
	b, err := os.ReadFile(filepath.Join(root, IndexPath))
	if err != nil {
		return nil, err
	}
	ix, err := ParseIndex(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", IndexPath, err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		ix.AddPage(strings.TrimSuffix(filepath.Base(p), ".md"), b)
	}
	return ix, nil
}

// ParseIndex reads the id tables of a requirements index. Every table row
// whose first cell is an id defines it; its level, role, rule and source
// cells must all be filled, and no id may be defined twice.
func ParseIndex(b []byte) (*Index, error) {
	ix := &Index{ids: map[string]bool{}, families: map[string]bool{}, headings: map[string][]string{}}
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		m := rowPattern.FindStringSubmatch(sc.Text())
		if m == nil || !idPattern.MatchString(m[1]) || idPattern.FindString(m[1]) != m[1] {
			continue
		}
		id := m[1]
		cells := strings.Split(m[2], "|")
		if len(cells) != 4 {
			errs = append(errs, fmt.Errorf("line %d: %s has %d cells after the id, want 4 (level, role, rule, source)", n, id, len(cells)))
			continue
		}
		for i, c := range cells {
			if strings.TrimSpace(c) == "" {
				errs = append(errs, fmt.Errorf("line %d: %s has an empty %s", n, id, []string{"level", "role", "rule", "source"}[i]))
			}
		}
		if ix.ids[id] {
			errs = append(errs, fmt.Errorf("line %d: %s is defined twice", n, id))
		}
		ix.ids[id] = true
		ix.families[id[:strings.LastIndexByte(id, '-')]] = true
	}
	if len(ix.ids) == 0 {
		errs = append(errs, errors.New("no requirement ids defined"))
	}
	return ix, errors.Join(errs...)
}

// AddPage records the headings of a docs page, by page name ("protocol"
// for docs/protocol.md), for section references.
func (ix *Index) AddPage(name string, b []byte) {
	var hs []string
	inFence := false
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(line, "#") {
			hs = append(hs, strings.TrimSpace(strings.TrimLeft(line, "#")))
		}
	}
	ix.headings[name] = hs
}

// hasFamily reports whether some defined id starts with prefix and a dash
// (ELI-C for ELI-C-01, ELICIT for ELICIT-ASK-01).
func (ix *Index) hasFamily(prefix string) bool {
	if ix.families[prefix] {
		return true
	}
	for f := range ix.families {
		if strings.HasPrefix(f, prefix+"-") {
			return true
		}
	}
	return false
}

// Defined reports whether id is defined in the index.
func (ix *Index) Defined(id string) bool { return ix.ids[id] }

// IDs returns the defined ids, sorted.
func (ix *Index) IDs() []string {
	ids := make([]string, 0, len(ix.ids))
	for id := range ix.ids {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Problem is one bad reference found by Check.
type Problem struct {
	Line int    // 1-based line number
	Text string // what was found: the id, family or reference
	Why  string // what is wrong and what to do instead
}

func (p Problem) String() string { return fmt.Sprintf("%d: %q %s", p.Line, p.Text, p.Why) }

// Check returns the bad references in text: undefined ids, wildcard
// families with no defined member, section references or Markdown links to
// a docs page heading that does not exist, and references out of the
// repository. Links to a heading of the same page ([x](#frag)) are not
// checked; CheckPage checks them.
func (ix *Index) Check(text []byte) []Problem { return ix.CheckPage("", text) }

// CheckPage is Check for the text of the page named page (its file name
// without .md, e.g. "protocol"), whose own headings links like [x](#frag)
// must name.
func (ix *Index) CheckPage(page string, text []byte) []Problem {
	var ps []Problem
	lines := strings.Split(string(text), "\n")
	for i, line := range lines {
		n := i + 1
		for _, id := range idPattern.FindAllString(line, -1) {
			if !ix.ids[id] && !notIDs[id] {
				ps = append(ps, Problem{n, id, "is not defined in " + IndexPath + ": define it there (a project rule is ELICIT-<AREA>-NN) or fix the id"})
			}
		}
		for _, m := range familyPattern.FindAllStringSubmatch(line, -1) {
			if !ix.hasFamily(m[1]) {
				ps = append(ps, Problem{n, m[0], "names a family of ids of which " + IndexPath + " defines none"})
			}
		}
		for _, f := range forbidden {
			if loc := f.re.FindStringIndex(line); loc != nil {
				ps = append(ps, Problem{n, line[loc[0]:loc[1]], f.why + ": " + f.hint})
			}
		}
		for _, m := range anchorLink.FindAllStringSubmatch(line, -1) {
			target := page
			if m[1] != "" {
				target = m[2]
			}
			hs, ok := ix.headings[target]
			if !ok {
				continue // not a page we know (or a link within an unnamed text)
			}
			if !slices.ContainsFunc(hs, func(h string) bool { return Slug(h) == m[3] }) {
				ps = append(ps, Problem{n, m[0], "links to a heading that " + target + ".md does not have"})
			}
		}
		for _, loc := range sectionRef.FindAllStringSubmatchIndex(line, -1) {
			page := line[loc[2]:loc[3]]
			hs, ok := ix.headings[page]
			if !ok || page == "requirements" {
				continue // not a docs page (or already reported above)
			}
			// A section name may run on into the next line of a comment.
			rest := line[loc[1]:] + " " + continuation(lines, i+1)
			if !slices.ContainsFunc(hs, func(h string) bool { return headingStarts(rest, h) }) {
				ps = append(ps, Problem{n, line[loc[0]:min(len(line), loc[1]+30)], "names a section that docs/" + page + ".md does not have"})
			}
		}
	}
	return ps
}

// Slug is the anchor GitHub gives a heading: lower case, letters, digits,
// "-" and "_" kept, spaces made "-", everything else dropped.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// continuation returns line i without the indentation and comment
// markers (//, #, *, >) that open it, or "" past the end.
func continuation(lines []string, i int) string {
	if i >= len(lines) {
		return ""
	}
	return strings.TrimLeft(lines[i], " \t/#*>")
}

// headingStarts reports whether rest begins with the heading h, followed
// by the end of the text or a character that cannot continue a word.
func headingStarts(rest, h string) bool {
	if !strings.HasPrefix(rest, h) {
		return false
	}
	if len(rest) == len(h) {
		return true
	}
	c := rest[len(h)]
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_')
}

// Root returns the module root: the nearest directory at or above the
// working directory that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Files returns the .go and .md files under root, relative to it, and the
// files under scripts/ and .ci/. It skips version-control and dependency
// directories and anything a local run leaves behind that is not source
// (build output, conformance results, elicitd's data directory).
func Files(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (name == ".git" || name == "node_modules" || name == "bin" || name == "elicitd-data" ||
				strings.HasPrefix(name, "conformance-results") || strings.HasPrefix(name, "conformance-client-results") ||
				(strings.HasPrefix(name, ".") && name != ".ci")) {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(rel); ext == ".go" || ext == ".md" || strings.HasPrefix(rel, "scripts/") || strings.HasPrefix(rel, ".ci/") {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}
