package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// root is the repository's root, seen from this package's directory.
const root = "../.."

// module is the module path of the repository.
const module = "github.com/heraldhq/herald"

// maxTableWidth is the widest a line of a markdown table may be.
const maxTableWidth = 120

// docFiles lists the markdown files whose tables and links are checked:
// README.md, ARCHITECTURE.md, RELIABILITY.md, BENCHMARKS.md and everything
// under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "ARCHITECTURE.md", "RELIABILITY.md", "BENCHMARKS.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

// proseLines calls f with each line of a markdown file outside fenced
// code blocks, with its line number.
func proseLines(t *testing.T, name string, f func(n int, line string)) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, name))
	require.NoError(t, err)
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			f(n, line)
		}
	}
	require.NoError(t, sc.Err())
}

// TestDocTablesFit: every line of a markdown table in the documentation
// is at most 120 characters wide, so that each row reads without
// scrolling.
func TestDocTablesFit(t *testing.T) {
	for _, name := range docFiles(t) {
		proseLines(t, name, func(n int, line string) {
			if strings.HasPrefix(strings.TrimSpace(line), "|") {
				if w := utf8.RuneCountInString(line); w > maxTableWidth {
					t.Errorf("%s:%d: a table row of %d characters", name, n, w)
				}
			}
		})
	}
}

// linkRE matches a markdown link or image and captures its target.
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksResolve: every relative link of the documentation names a
// file or directory of the repository, and a link to a heading of a
// markdown file names one that exists.
func TestDocLinksResolve(t *testing.T) {
	anchors := map[string][]string{}
	for _, name := range docFiles(t) {
		proseLines(t, name, func(n int, line string) {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := name
				if file != "" {
					dest = path.Join(path.Dir(name), file)
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
						t.Errorf("%s:%d: link %s: %v", name, n, target, err)
						continue
					}
				}
				if frag == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if _, ok := anchors[dest]; !ok {
					anchors[dest] = headingAnchors(t, dest)
				}
				if !slices.Contains(anchors[dest], frag) {
					t.Errorf("%s:%d: link %s: no such heading", name, n, target)
				}
			}
		})
	}
}

// headingAnchors returns the anchors of a markdown file's headings, as
// GitHub makes them: lower case, punctuation dropped, spaces as hyphens,
// and -1, -2 ... after a repeated one.
func headingAnchors(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	seen := map[string]int{}
	proseLines(t, name, func(_ int, line string) {
		if !strings.HasPrefix(line, "#") {
			return
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, k))
		} else {
			out = append(out, a)
		}
		seen[a]++
	})
	return out
}

// TestHelpFits: herald help and every command's -h fit 100 columns, tabs
// counted to the next multiple of 8.
func TestHelpFits(t *testing.T) {
	for _, args := range [][]string{
		{"help"}, {"serve", "-h"}, {"check", "-h"}, {"healthcheck", "-h"}, {"secrets", "-h"}, {"secrets", "rotate", "-h"},
		{"simulate", "smsc", "-h"}, {"simulate", "chat", "-h"},
	} {
		var out bytes.Buffer
		require.Equal(t, 0, run(t.Context(), args, env(nil), &out, &out), "herald %s", strings.Join(args, " "))
		require.NotEmpty(t, out.String())
		for i, line := range strings.Split(out.String(), "\n") {
			w := 0
			for _, r := range line {
				if r == '\t' {
					w += 8 - w%8
				} else {
					w++
				}
			}
			require.LessOrEqual(t, w, usageWidth, "herald %s, line %d: %q", strings.Join(args, " "), i+1, line)
		}
	}
}

// TestEveryVariableIsDocumented: the HERALD_ variables the binary reads
// (the string literals naming one in the source of herald and of the
// packages of this module it imports) are those loadConfig asks for and
// envVars lists, and docs/configuration.md has each one's row exactly
// once, as herald help words it, and no row of another.
func TestEveryVariableIsDocumented(t *testing.T) {
	var listed []string
	for _, v := range envVars() {
		listed = append(listed, v.name)
	}
	slices.Sort(listed)

	asked := map[string]bool{}
	_, err := loadConfig(func(name string) string { asked[name] = true; return "" })
	require.NoError(t, err)
	require.Equal(t, listed, slices.Sorted(func(yield func(string) bool) {
		for k := range asked {
			if !yield(k) {
				return
			}
		}
	}), "envVars lists exactly the variables loadConfig reads")
	require.Equal(t, listed, sourceVariables(t), "envVars lists exactly the variables named in the binary's source")

	data, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	require.NoError(t, err)
	doc := string(data)
	for _, v := range envVars() {
		row := fmt.Sprintf("| `%s` | %s | %s |", v.name, v.def, v.meaning)
		require.Equal(t, 1, strings.Count(doc, row+"\n"),
			"docs/configuration.md has the row of %s once, as herald help words it: %s", v.name, row)
	}
	rowRE := regexp.MustCompile("(?m)^\\| `(HERALD_[A-Z0-9_]+)` \\|")
	var rows []string
	for _, m := range rowRE.FindAllStringSubmatch(doc, -1) {
		rows = append(rows, m[1])
	}
	slices.Sort(rows)
	require.Equal(t, listed, rows, "docs/configuration.md has one row for each variable, none for another")

	// Every variable the page names, or family of them (HERALD_SMPP_*), is one of these.
	for _, m := range regexp.MustCompile(`HERALD_[A-Z0-9_]*[A-Z0-9](_\*)?`).FindAllString(doc, -1) {
		if prefix, ok := strings.CutSuffix(m, "*"); ok {
			require.True(t, slices.ContainsFunc(listed, func(v string) bool { return strings.HasPrefix(v, prefix) }),
				"docs/configuration.md names %s, which matches no variable", m)
			continue
		}
		require.Contains(t, listed, m, "docs/configuration.md names %s, which herald does not read", m)
	}
}

// sourceVariables returns, sorted, the HERALD_ variables named by a
// string literal in the non-test source of this package and of every
// package of the module it imports.
func sourceVariables(t *testing.T) []string {
	t.Helper()
	nameRE := regexp.MustCompile(`^HERALD_[A-Z0-9_]+$`)
	found := map[string]bool{}
	seen := map[string]bool{module + "/cmd/herald": true}
	queue := []string{module + "/cmd/herald"}
	fset := token.NewFileSet()
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")))
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
			require.NoError(t, err)
			for _, imp := range f.Imports {
				p, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				if (p == module || strings.HasPrefix(p, module+"/")) && !seen[p] {
					seen[p] = true
					queue = append(queue, p)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && nameRE.MatchString(s) {
						found[s] = true
					}
				}
				return true
			})
		}
	}
	require.Greater(t, len(seen), 10, "the packages herald imports were found")
	var out []string
	for k := range found {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestReliabilityOpensWithItsTable: RELIABILITY.md opens with the table
// of scenario, guarantee and test, and every test it names is a test
// function of the repository.
func TestReliabilityOpensWithItsTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "RELIABILITY.md"))
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	require.GreaterOrEqual(t, len(lines), 3)
	require.True(t, strings.HasPrefix(lines[0], "# "), "a title first: %q", lines[0])
	require.Equal(t, "| scenario | guarantee | test |", lines[1], "the table right after the title")

	defined := map[string]bool{}
	funcRE := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, "_test.go") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range funcRE.FindAllStringSubmatch(string(b), -1) {
				defined[m[1]] = true
			}
		}
		return nil
	})
	require.NoError(t, err)
	rows := 0
	for _, l := range lines[3:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		require.Len(t, cells, 3, "a row of scenario, guarantee and test: %q", l)
		names := regexp.MustCompile("`(Test\\w+)`").FindAllStringSubmatch(cells[2], -1)
		require.NotEmpty(t, names, "the row names its test: %q", l)
		for _, m := range names {
			require.True(t, defined[m[1]], "RELIABILITY.md names %s, which no test file defines", m[1])
		}
		rows++
	}
	require.Positive(t, rows)
}
