// Package server is Herald's HTTP edge: the public API v1 under /api/v1,
// the operators' admin API under /admin/v1, the health endpoints, API-key
// authentication and the one table that maps error codes to HTTP statuses.
// It calls the domain services (campaign, survey) and never a storage or
// transport adapter; the binary composes those and hands the services in.
//
// # Routes
//
//	GET  /healthz                       process up: 200 {"status":"ok"}
//	GET  /readyz                        the readiness checks (Config.Checks): 200, or 503 when a required one fails
//	GET  /api/v1/openapi.json           the OpenAPI 3.1 document of the public and admin APIs
//	*    /api/v1/...                    the public API (X-API-Key)
//	*    /admin/v1/...                  the admin API (Authorization: Bearer)
//	*    /callbacks/chat/{chatServiceId} one chat service's provider callbacks (Config.ChatCallbacks)
//	*    /callbacks/chat                the callbacks of the deployment's own chat endpoint (the same)
//
// The OpenAPI document (openapi/openapi.json, embedded) lists every route
// of the public API and of the admin API with its parameters, bodies,
// responses and errors, and the health endpoints. The admin operations
// (tag Admin) use the security scheme AdminToken, a bearer token, instead
// of ApiKey.
//
// # Readiness
//
// GET /readyz runs every Config.Checks at once, each within 5 seconds, and
// answers {"status", "checks": [{"name", "status", "required", "error"?}]}
// in the order of the configuration. A required check that fails makes it
// a 503 (status "unavailable", with the error and message of the error
// format and Retry-After: 5), so that a load balancer stops sending
// traffic; an optional check that fails is reported (status "degraded")
// and the answer stays 200. A failed check's error is logged; the answer
// tells only the Message of a *messaging.Error the check returned (text
// meant for callers), "timed out" or "failed". The reference binary checks
// the database (required) and the SMSC and chat provider connections
// (optional): while a provider is down, accepted messages wait in the
// queue and go out once it is back, so the API keeps taking them rather
// than turning callers away. GET /healthz checks nothing: it tells that the
// process serves HTTP.
//
// # Errors
//
// Every error answers a JSON body {"error", "message", "validationErrors"?}:
// `error` is the API's name of the error ("Bad Request", "Too many
// recipients", ...), `message` a sentence for a person, and
// `validationErrors` maps the JSON path of each faulty field to what is wrong
// with it. A messaging.Error's code picks the status (see statusOf); 429
// answers also carry currentPending, requestedCount, maxAllowed,
// availableCapacity and retryAfterSeconds, and a Retry-After header. Internal
// errors are logged with the request id and answered with a fixed message:
// nothing internal reaches a caller.
//
// An error that says how long to wait (messaging.Error.RetryAfter: the
// store cannot reach its database, or the database is starting) is a 503
// "Service Unavailable" with a Retry-After header in whole seconds, rounded
// up and at least 1; its cause is logged, not answered. A 503 without
// Retry-After (a company not activated) will not pass by waiting.
//
// # Choices where the API contract leaves room
//
//   - An unknown path answers 404 and a known path asked with another method
//     405 with an Allow header, both with the JSON error body.
//   - Request bodies are read as JSON whatever their Content-Type.
//   - Unknown fields in request bodies are ignored (a newer client talking to
//     an older server keeps working); a known field of the wrong JSON type is
//     a 400 naming the field.
//   - messageType is accepted as its number (1-8) or its name
//     ("SimpleText" ... "File"); it is always answered as a number, 1 for SMS
//     templates. An SMS template given another type than 1 is a 400.
//   - typeSpecificConfig is accepted as a JSON string holding the object or
//     as the object itself, and answered as a string (null when none).
//   - Placeholder values may be JSON strings, numbers or booleans; numbers
//     are used exactly as written (25.50 stays "25.50"). Objects and arrays
//     are a 400. Direct sends take no placeholders: giving some is a 400
//     rather than being silently ignored.
//   - Bodies with recipients are read as a stream: the request is refused
//     with 400 "Too many recipients" as soon as the element past the limit
//     appears, before the rest is read. A missing or empty recipients array
//     is a 400 on the field recipients.
//   - A phoneNumber query parameter (GET /messages, GET /survey-results)
//     that starts with a space is read as starting with '+': a '+' pasted
//     unencoded into a query string (?phoneNumber=+447700900001) reaches
//     the server as a space, and a caller means the E.164 number. Only one
//     leading space is read so; any other space is still a 400.
//   - Query parameters and path segments the API reads may not hold
//     control characters (U+0000 to U+001F but TAB, LF and CR) or invalid
//     UTF-8: such a value is a 400 naming the parameter, before any
//     database sees it. Parameters the API does not read are ignored
//     whatever they hold.
//   - startDate and endDate take an RFC 3339 time or a date (YYYY-MM-DD, UTC);
//     an endDate given as a date covers that whole day.
//   - Request bodies are limited by route: Config.MaxBodyBytes (64 MiB) on
//     the four sending routes, which carry up to 200,000 recipients, and on
//     the handlers of Config.Extra; Config.MaxSmallBodyBytes (1 MiB) on
//     every other route. A larger body is a 413 "Request Entity Too
//     Large", before anything is read when Content-Length announces it.
//   - Names in request bodies match as encoding/json matches them:
//     exactly, else without regard to case; the streaming decoder of the
//     sending routes does the same ("RECIPIENTS" is recipients, and
//     recipients given twice under any spelling is a 400).
//   - Times are answered in RFC 3339, UTC, with milliseconds.
//   - Optional strings that are empty (description, externalUserId, details,
//     ...) and ids that are zero (smsSenderId, chatServiceId, ...) are
//     answered as null.
//   - The response to an add-message carries the phone number normalised
//     (digits only); invalidPhoneNumbers list numbers exactly as sent.
//   - Send answers also carry contentTooLong: the numbers (as sent) of the
//     bulk recipients skipped because their rendered message would exceed
//     the template's limits; skippedCount counts both lists. A direct send
//     or add-message whose message would be too long is a 400 instead.
//   - Bulk send answers carry missingPlaceholders (the template's
//     placeholders some recipients have no value for, with counts) and
//     missingPlaceholderPhoneNumbers (those skipped for it when the
//     request says "missingPlaceholders": "skip"); an add-message answers
//     missingPlaceholders too.
//   - Campaigns carry unconfirmedCount: SMS still Sent whose delivery
//     receipt did not come within the receipt timeout. pendingCount leaves
//     them out.
//   - A campaign's detail also carries completedAt and failureReason (null
//     until they apply).
//   - POST /campaigns/{id}/start answers 200 {campaignId, status}: the
//     campaign is InProgress when it answers (the sends that follow are the
//     dispatcher's). In the rare case that the campaign changed while it
//     was being started (another request started it, or its preparation
//     failed, between the read and the write) it answers 409 Conflict,
//     asking to try again, or the error of the campaign's new state.
//   - The admin API's chat service answer carries providerServiceId besides
//     id and brandName, so that an operator sees what the service was
//     created with.
//   - Every response carries an X-Request-Id header: the caller's own when it
//     sent a reasonable one, else a fresh one. The access log records method,
//     path (without the query), status, duration and request id, never a body
//     or a key.
//
// # Request bodies under load
//
// A body must keep arriving. Its read deadline starts at
// Config.BodyReadTimeout (10 s) and grows by the time each byte that
// arrives takes at Config.MinBodyRate (64 KiB/s): a body may take 10 s
// plus its size at 64 KiB/s, so a 25 MB bulk send of 200,000 recipients
// may take six minutes and a half, while a client that stops sending is
// cut off 10 s after its last bytes' credit runs out. A minimum rate with
// a floor rather than one fixed deadline per route: a fixed deadline long
// enough for the largest body would also be what every stalled small
// request holds a connection for. A body that misses its deadline is
// answered 408 "Request Timeout" and its connection closed; the handlers
// of Config.Extra and the chat callbacks get a read error instead and answer
// as they do, and their connection is closed too. The deadline is set with
// http.ResponseController, so it works under any http.Server, as long as
// middleware wrapped around the handler lets the controller reach the
// connection (an Unwrap() http.ResponseWriter method; without one the
// bodies have no deadline). That server's ReadTimeout, if set, would
// still cut every body short at its fixed length: leave it unset, and set
// ReadHeaderTimeout and IdleTimeout.
//
// An answer given before its request's body was read to the end (a 401, a
// refusal) closes the connection, rather than reading the rest of a body
// nobody needs.
//
// The bodies of requests in flight share a budget of
// Config.BodyBudgetBytes (twice MaxBodyBytes, 128 MiB, by default). A
// request is charged its Content-Length before its body is read, and a
// body of unknown length (chunked) is charged 64 KiB at a time as it
// arrives; the charge is given back when the request has been answered.
// The budget counts body bytes: what a request holds while it is decoded
// and written (recipients, strings) is a small multiple of them. A request
// that finds no room within Config.BodyBudgetWait (1 s) is answered 503
// "Service Unavailable" with Retry-After: 1 and its connection closed; a
// body announced larger than its route's limit is a 413 at once, whatever
// the budget. Authentication runs first, so requests without a valid key
// take nothing from the budget.
//
// # Admin API
//
// Operators set companies up under /admin/v1 with `Authorization: Bearer
// <Config.AdminToken>`; with no token configured the admin API answers 404.
// With Config.Routing set it also manages the SMPP connectors and routes
// (/admin/v1/smpp-connectors, /admin/v1/routes). The OpenAPI document
// describes the admin API too.
//
//	POST /admin/v1/companies                                 {name} -> 201 {id, name, active, maxPerSecond}
//	GET  /admin/v1/companies/{id}                            200 {id, name, active, maxPerSecond}
//	PUT  /admin/v1/companies/{id}/rate-limit                 {maxPerSecond} -> 200 the company (0: no limit)
//	POST /admin/v1/companies/{id}/activate                   200 {id, name, active, maxPerSecond}
//	POST /admin/v1/companies/{id}/deactivate                 200 {id, name, active, maxPerSecond}
//	POST /admin/v1/companies/{id}/api-keys                   201 {apiKey} (revokes the previous key)
//	POST /admin/v1/companies/{id}/sms-senders                {senderId} -> 201 {id, senderId, approved}
//	POST /admin/v1/companies/{id}/sms-senders/{sid}/approve  200 {id, senderId, approved}
//	POST /admin/v1/sms-senders/{sid}/approve                 200 {id, senderId, approved}
//	POST /admin/v1/companies/{id}/chat-services              {brandName, providerServiceId} -> 201 {id, brandName, providerServiceId}
package server
