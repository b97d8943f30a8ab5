package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/store/memstore"
)

// A handler on the in-memory store: an operator sets a company up through
// the admin API, and the company creates an SMS template with its key.
func ExampleNew() {
	hd, err := herald.New(herald.Config{Store: memstore.New()})
	if err != nil {
		panic(err)
	}
	defer hd.Close(context.Background())
	h, err := server.New(server.Config{Herald: hd, AdminToken: "operator-secret"})
	if err != nil {
		panic(err)
	}

	call := func(method, path, key, body string) (int, string) {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if strings.HasPrefix(path, "/admin/") {
			r.Header.Set("Authorization", "Bearer operator-secret")
		} else {
			r.Header.Set("X-API-Key", key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}

	// The operator side; the same calls exist on accounts.Service.
	c, _ := hd.Accounts().CreateCompany(context.Background(), "Acme")
	status, _ := call("POST", "/admin/v1/companies/"+c.ID.String()+"/activate", "", "")
	fmt.Println("activate:", status)
	key, _ := hd.Accounts().GenerateAPIKey(context.Background(), c.ID)

	status, _ = call("POST", "/api/v1/templates/sms", key, `{"name":"Welcome","templateContent":"Hi {{name}}"}`)
	fmt.Println("create template:", status)
	status, body := call("GET", "/api/v1/templates/nope", key, "")
	fmt.Println(status, body)
	status, body = call("GET", "/api/v1/sms-senders", "", "")
	fmt.Println(status, body)
	// Output:
	// activate: 200
	// create template: 201
	// 400 {"error":"Bad Request","message":"id \"nope\" is not a valid UUID","validationErrors":{"id":"id \"nope\" is not a valid UUID"}}
	//
	// 401 {"error":"Unauthorized","message":"X-API-Key header is missing or invalid"}
}
