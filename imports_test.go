package herald_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/heraldhq/herald"

// adapterLibs are the libraries only adapters (store/*, transport/*) may
// import.
var adapterLibs = []string{"github.com/uptrace/bun", "github.com/linxGnu/gosmpp", "github.com/gorilla/mux", "modernc.org/sqlite"}

// importsOf returns, for every directory holding Go code, the imports of
// its non-test files.
func importsOf(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[dir] = append(out[dir], p)
		}
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

func isStd(p string) bool { return !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") }

func under(dir, root string) bool { return dir == root || strings.HasPrefix(dir, root+"/") }

// allowed tells whether package dir may import p, following the rules of
// the module's package documentation (doc.go).
func allowed(dir, p string) (bool, string) {
	internal := strings.HasPrefix(p, module+"/")
	rel := strings.TrimPrefix(p, module+"/")
	domain := map[string][]string{
		"messaging":            {},
		"egress":               {},
		"internal/ttlcache":    {},
		"internal/groupcommit": {},
		"internal/pace":        {},
		"internal/secretbox":   {},
		"template":             {"messaging", "egress"},
		"accounts":             {"messaging", "template", "internal/ttlcache"},
		"campaign":             {"messaging", "template", "accounts", "internal/ttlcache"},
		"delivery":             {"messaging", "accounts", "campaign", "internal/groupcommit", "internal/ttlcache", "internal/pace"},
		"survey":               {"messaging", "campaign", "internal/groupcommit"},
		"webhook":              {"messaging", "campaign", "internal/pace", "egress"},
		"inbound":              {"messaging", "delivery"},
		"optout":               {"messaging"},
		"idempotency":          {"messaging"},
		"phonezone":            {},
		"routing":              {"messaging"},
	}
	// Libraries a domain package may use: data no one should keep by hand.
	// The tracing API (never its SDK) lets delivery and webhook open spans;
	// the operator's exporters are chosen in cmd/herald.
	traceAPI := []string{"go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes"}
	libs := map[string][]string{"phonezone": {"github.com/nyaruka/phonenumbers"}, "delivery": traceAPI, "webhook": traceAPI}
	if deps, ok := domain[dir]; ok {
		if isStd(p) {
			if p == "net/http" || strings.HasPrefix(p, "net/http/") || p == "database/sql" || p == "os/exec" {
				return false, "domain packages do no I/O of this kind"
			}
			return true, ""
		}
		for _, d := range deps {
			if internal && rel == d {
				return true, ""
			}
		}
		for _, lib := range libs[dir] {
			if p == lib || strings.HasPrefix(p, lib+"/") {
				return true, ""
			}
		}
		return false, "domain packages import the standard library and the packages below them only"
	}
	if dir == "." { // the façade composes the domain behind its ports
		if isStd(p) {
			if p == "net/http" || strings.HasPrefix(p, "net/http/") || p == "database/sql" || p == "os/exec" {
				return false, "the façade does no I/O of its own"
			}
			return true, ""
		}
		if internal {
			if _, ok := domain[rel]; ok {
				return true, ""
			}
		}
		return false, "the façade imports the standard library and the domain packages only"
	}
	if (strings.HasPrefix(p, "go.opentelemetry.io/otel/sdk") || strings.HasPrefix(p, "go.opentelemetry.io/otel/exporters")) && !under(dir, "cmd") {
		return false, "only cmd/herald configures the tracing SDK and its exporters"
	}
	for _, lib := range adapterLibs {
		if p == lib || strings.HasPrefix(p, lib+"/") {
			// Load programs under bench/ drive databases directly (to set
			// up and inspect what they measure); they are not part of the
			// library.
			if under(dir, "store") || under(dir, "transport") || under(dir, "bench") || (lib == "github.com/gorilla/mux" && under(dir, "server")) {
				return true, ""
			}
			return false, "only adapters import " + lib
		}
	}
	if under(dir, "server") && internal && (under(rel, "store") || under(rel, "transport")) {
		return false, "server imports the domain services, never an adapter"
	}
	if (under(dir, "store") || under(dir, "transport")) && internal && (under(rel, "server") || under(rel, "examples")) {
		return false, "adapters never import the server or examples"
	}
	return true, ""
}

func TestImportRules(t *testing.T) {
	imports := importsOf(t)
	require.Contains(t, imports, "messaging", "the walk must find the packages")
	for dir, ps := range imports {
		for _, p := range ps {
			ok, why := allowed(dir, p)
			require.True(t, ok, "%s imports %s: %s", dir, p, why)
		}
	}
}

func TestImportRulesCatchViolations(t *testing.T) {
	bad := [][2]string{
		{"messaging", module + "/template"},
		{"template", "github.com/uptrace/bun"},
		{"campaign", "net/http"},
		{"delivery", "github.com/linxGnu/gosmpp/pdu"},
		{"survey", module + "/store/memstore"},
		{"accounts", module + "/campaign"},
		{"campaign", module + "/delivery"},
		{"delivery", module + "/survey"},
		{"server", module + "/store/sqlstore"},
		{"server", "github.com/uptrace/bun"},
		{"server", module + "/transport/smpp"},
		{"examples/basic", "github.com/linxGnu/gosmpp"},
		{"store/sqlstore", module + "/server"},
		{".", module + "/store/memstore"},
		{".", module + "/transport/smpp"},
		{".", "net/http"},
		{"egress", "net/http"},
		{"egress", module + "/messaging"},
		{"delivery", "go.opentelemetry.io/otel/sdk/trace"},
		{"delivery", "go.opentelemetry.io/otel"},
		{"campaign", "go.opentelemetry.io/otel/trace"},
		{"server", "go.opentelemetry.io/otel/exporters/stdout/stdouttrace"},
	}
	for _, b := range bad {
		ok, _ := allowed(b[0], b[1])
		require.False(t, ok, "%s importing %s must be refused", b[0], b[1])
	}
	good := [][2]string{
		{"campaign", module + "/template"},
		{"webhook", module + "/egress"},
		{"template", module + "/egress"},
		{"campaign", module + "/accounts"},
		{"delivery", module + "/campaign"},
		{"campaign", "context"},
		{"store/sqlstore", "github.com/uptrace/bun/dialect/pgdialect"},
		{"server", "github.com/gorilla/mux"},
		{"cmd/herald", module + "/store/sqlstore"},
		{".", module + "/delivery"},
		{"delivery", "go.opentelemetry.io/otel/trace"},
		{"webhook", "go.opentelemetry.io/otel/trace/noop"},
		{"cmd/herald", "go.opentelemetry.io/otel/sdk/trace"},
	}
	for _, g := range good {
		ok, why := allowed(g[0], g[1])
		require.True(t, ok, "%s importing %s: %s", g[0], g[1], why)
	}
	_, err := os.Stat("go.mod")
	require.NoError(t, err, "the test runs from the module root")
}

// providerWords are names that belong to a chat provider's protocol: the
// domain's chat types speak of a message's reference, its provider id and
// a failure's reason, never of these. Compared without case and without
// underscores.
func providerWords() []string {
	return []string{"seq", "token", "trackingdata", "messagetoken", "wamid", "clientref", "bizopaquecallbackdata",
		"callbackdata", "viber", "whatsapp", "vonage", "infobip"}
}

// providerNames returns the fields of the struct types named Chat... and
// the string literals, in the Go files given (name: source), that are a
// provider word.
func providerNames(t *testing.T, files map[string]string) []string {
	t.Helper()
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(strings.Trim(s, "`\""), "_", "")) }
	hit := func(s string) bool { return slices.Contains(providerWords(), norm(s)) }
	var found []string
	fset := token.NewFileSet()
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				st, ok := n.Type.(*ast.StructType)
				if !ok || !strings.HasPrefix(n.Name.Name, "Chat") {
					return true
				}
				for _, fl := range st.Fields.List {
					for _, id := range fl.Names {
						if hit(id.Name) {
							found = append(found, fmt.Sprintf("%s: %s.%s", fset.Position(id.Pos()), n.Name.Name, id.Name))
						}
					}
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING && hit(n.Value) {
					found = append(found, fmt.Sprintf("%s: literal %s", fset.Position(n.Pos()), n.Value))
				}
			}
			return true
		})
	}
	return found
}

// TestDeliveryNamesNoProviderField: package delivery (the dispatcher,
// chat statuses, the fallback) holds no field or literal of a provider's
// protocol; adapters map theirs to Herald's words.
func TestDeliveryNamesNoProviderField(t *testing.T) {
	files := map[string]string{}
	paths, err := filepath.Glob("delivery/*.go")
	require.NoError(t, err)
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		files[p] = string(b)
	}
	require.NotEmpty(t, files)
	require.Empty(t, providerNames(t, files))
}

func TestProviderNamesCatchViolations(t *testing.T) {
	for _, src := range []string{
		"package delivery\ntype ChatMessage struct{ Seq int64 }\n",
		"package delivery\ntype ChatResult struct{ Token string }\n",
		"package delivery\nconst k = \"tracking_data\"\n",
		"package delivery\ntype ChatEvent struct{ Tracking_Data string }\n",
	} {
		require.NotEmpty(t, providerNames(t, map[string]string{"x.go": src}), src)
	}
	require.Empty(t, providerNames(t, map[string]string{"x.go": "package delivery\ntype ChatSend struct{ Ref int64 }\n"}))
}
