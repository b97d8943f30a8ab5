package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/idempotency"
	"github.com/heraldhq/herald/inbound"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/survey"
	"github.com/heraldhq/herald/webhook"
)

// DefaultMaxBodyBytes is the default limit of a request body: room for the
// largest request the API allows (200,000 recipients with placeholders).
const DefaultMaxBodyBytes = 64 << 20

// readyTimeout bounds one readiness check.
const readyTimeout = 5 * time.Second

// readyRetryAfter is the Retry-After of a 503 from GET /readyz.
const readyRetryAfter = 5 * time.Second

// Check is one check of GET /readyz: a part the service depends on.
type Check struct {
	// Name names the check in the answer ("database", "smsc"). Required,
	// unique.
	Name string
	// Check returns nil when the part works. It gets at most 5 seconds.
	// Its error is logged; the answer carries only the Message of a
	// *messaging.Error in its chain (text meant for callers), "timed
	// out", or "failed". Required.
	Check func(ctx context.Context) error
	// Optional checks are reported but do not make the service unready:
	// /readyz answers 200 with status "degraded" when only optional checks
	// fail.
	Optional bool
}

// Config configures the HTTP handler. Accounts, Campaigns and Surveys are
// required unless Herald is set; every other field has a documented
// zero-value default.
type Config struct {
	// Herald, when set, is the Herald the API serves: Accounts,
	// Campaigns and Surveys default to its own.
	Herald *herald.Herald
	// Accounts runs companies, API keys, senders and chat services, and
	// authenticates requests. Required unless Herald is set.
	Accounts *accounts.Service
	// Campaigns runs templates, campaigns and sends. Required unless
	// Herald is set.
	Campaigns *campaign.Service
	// Surveys reports survey results. Required unless Herald is set.
	Surveys *survey.Service
	// OptOuts manages the companies' opt-out lists. Defaults to Herald's
	// when Herald is set; nil: the /opt-outs routes answer 404.
	OptOuts *optout.Service
	// Inbound lists the SMS people sent to the companies' senders.
	// Defaults to Herald's when Herald is set; nil: GET /inbound answers
	// 404.
	Inbound *inbound.Service
	// Webhooks registers companies' webhook endpoints. Defaults to
	// Herald's when Herald is set; nil: the /webhooks routes answer 404.
	Webhooks *webhook.Service
	// Idempotency runs POST requests that carry an Idempotency-Key header
	// once per key. Defaults to Herald's when Herald is set; nil: the
	// header is ignored.
	Idempotency *idempotency.Service
	// Routing manages the SMPP connectors and routes of the admin API.
	// Defaults to Herald's when Herald is set; nil: those admin routes
	// answer 404.
	Routing *routing.Service
	// ConnectorStates, when set, gives the live state shown with each
	// connector. Defaults to Herald's when Herald is set.
	ConnectorStates routing.StateReader
	// AdminToken guards the admin API (Authorization: Bearer). Empty: the
	// admin API is off and its paths answer 404 "Admin API Disabled".
	AdminToken string
	// Version is the server's version, which GET /admin/v1/whoami
	// reports. Empty: unknown.
	Version string
	// Logger receives the access log and internal errors. Default: discard.
	Logger *slog.Logger
	// Checks are the readiness checks of GET /readyz, answered in this
	// order. None: always ready.
	Checks []Check
	// Ready is a required check named "ready", run after Checks.
	//
	// Deprecated: use Checks, which name each part.
	Ready func(ctx context.Context) error
	// ChatCallbacks serves the chat providers' callbacks, mounted without
	// API-key authentication at /callbacks/chat (the deployment's own chat
	// endpoint) and /callbacks/chat/{chatServiceId} (one chat service's:
	// the handler reads the id from the path). Defaults to Herald's chat
	// sender when Herald is set and that sender is an http.Handler
	// (transport/chatroute); nil: those paths answer 404.
	ChatCallbacks http.Handler
	// Tracer opens one span per routed request (its name and http.route
	// are the route's template). Nil: no span, no cost.
	Tracer trace.TracerProvider
	// Traces keeps the span context of each direct send's request, by
	// campaign, for the dispatcher's spans of its messages. Nil: none kept.
	Traces *delivery.Traces
	// Extra mounts more handlers outside the API, without API-key
	// authentication, by path: an exact path ("/metrics"), or a prefix when
	// it ends with a slash ("/callbacks/"). Longer paths are tried first.
	Extra map[string]http.Handler
	// MaxBodyBytes limits the bodies of the sending routes (those that
	// carry recipients) and of the handlers of Extra. Default
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxSmallBodyBytes limits the bodies of every other route. Default
	// DefaultMaxSmallBodyBytes, or MaxBodyBytes when that is smaller.
	MaxSmallBodyBytes int64
	// BodyReadTimeout and MinBodyRate set the read deadline of request
	// bodies, Extra's included: a body may take BodyReadTimeout plus the
	// time its bytes take at MinBodyRate bytes per second; the deadline
	// moves as bytes arrive. A body that stalls is answered 408 and its
	// connection closed. Defaults DefaultBodyReadTimeout and
	// DefaultMinBodyRate.
	BodyReadTimeout time.Duration
	MinBodyRate     int64
	// BodyBudgetBytes caps the request body bytes that requests in flight
	// hold together, Extra's included. A request takes its announced
	// Content-Length before its body is read, a body of unknown length as
	// it arrives; a request that finds no room within BodyBudgetWait is
	// answered 503 with Retry-After. Default twice the largest body
	// limit; never less than the largest body limit.
	BodyBudgetBytes int64
	// BodyBudgetWait is how long a request waits for room in the body
	// budget. Default DefaultBodyBudgetWait.
	BodyBudgetWait time.Duration
}

// server is the handler New returns.
type server struct {
	accounts   *accounts.Service
	campaigns  *campaign.Service
	surveys    *survey.Service
	webhooks   *webhook.Service
	inbound    *inbound.Service
	optOuts    *optout.Service
	idem       *idempotency.Service
	routing    *routing.Service
	connStates routing.StateReader
	adminToken string
	version    string
	log        *slog.Logger
	checks     []Check
	limits     bodyLimits
	budget     *budget
	router     *mux.Router
	tracer     trace.TracerProvider
	traces     *delivery.Traces

	idPrefix string
	seq      atomic.Uint64
	bufs     sync.Pool // *bytes.Buffer of writeJSON
}

// New returns the HTTP handler of Herald: the public API v1, the admin API,
// the health endpoints and cfg.Extra. It fails when cfg.Accounts,
// cfg.Campaigns or cfg.Surveys is nil, or a check has no name, a name given twice or no
// function.
func New(cfg Config) (http.Handler, error) {
	if h := cfg.Herald; h != nil {
		if cfg.Accounts == nil {
			cfg.Accounts = h.Accounts()
		}
		if cfg.Campaigns == nil {
			cfg.Campaigns = h.Campaigns()
		}
		if cfg.Surveys == nil {
			cfg.Surveys = h.Surveys()
		}
		if cfg.Webhooks == nil {
			cfg.Webhooks = h.Webhooks()
		}
		if cfg.Inbound == nil {
			cfg.Inbound = h.Inbound()
		}
		if cfg.OptOuts == nil {
			cfg.OptOuts = h.OptOuts()
		}
		if cfg.Idempotency == nil {
			cfg.Idempotency = h.Idempotency()
		}
		if cfg.Routing == nil {
			cfg.Routing = h.Routing()
		}
		if cfg.ChatCallbacks == nil {
			if ch, ok := h.ChatSender().(http.Handler); ok {
				cfg.ChatCallbacks = ch
			}
		}
		if cfg.ConnectorStates == nil {
			if sr, ok := h.SMSSender().(routing.StateReader); ok {
				cfg.ConnectorStates = sr
			}
		}
	}
	if cfg.Accounts == nil || cfg.Campaigns == nil || cfg.Surveys == nil {
		return nil, errors.New("server: Config.Accounts, Config.Campaigns and Config.Surveys are required")
	}
	checks := slices.Clone(cfg.Checks)
	if cfg.Ready != nil {
		checks = append(checks, Check{Name: "ready", Check: cfg.Ready})
	}
	names := make(map[string]bool, len(checks))
	for _, c := range checks {
		if c.Name == "" || c.Check == nil || names[c.Name] {
			return nil, fmt.Errorf("server: check %q needs a unique name and a function", c.Name)
		}
		names[c.Name] = true
	}
	s := &server{accounts: cfg.Accounts, campaigns: cfg.Campaigns, surveys: cfg.Surveys, webhooks: cfg.Webhooks, inbound: cfg.Inbound, optOuts: cfg.OptOuts, idem: cfg.Idempotency, routing: cfg.Routing, connStates: cfg.ConnectorStates, adminToken: cfg.AdminToken, version: cfg.Version,
		log: cfg.Logger, checks: checks, tracer: cfg.Tracer, traces: cfg.Traces}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.limits, s.budget = newBodyLimits(cfg)
	var p [4]byte
	_, _ = rand.Read(p[:])
	s.idPrefix = hex.EncodeToString(p[:])
	s.router = s.routes(cfg.Extra, cfg.ChatCallbacks)
	return s, nil
}

// handlerFunc is a handler that returns its error; h answers it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// h adapts a handlerFunc.
func (s *server) h(f handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// routes builds the router.
func (s *server) routes(extra map[string]http.Handler, chatCallbacks http.Handler) *mux.Router {
	r := mux.NewRouter()
	notFound := s.h(func(w http.ResponseWriter, r *http.Request) error {
		return &httpError{status: http.StatusNotFound, name: messaging.NameNotFound,
			message: "No route " + r.URL.Path}
	})
	r.NotFoundHandler = notFound
	r.MethodNotAllowedHandler = http.HandlerFunc(s.methodNotAllowed)
	if s.tracer != nil {
		r.Use(s.traced)
	}
	if s.adminToken != "" {
		// Under /admin/v1 a request without the token is a 401 whatever
		// its path and method: a caller without the token learns nothing
		// of the routes.
		adminFirst := func(next http.Handler) http.Handler {
			guarded := s.adminAuth(next)
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if strings.HasPrefix(req.URL.Path, "/admin/v1/") || req.URL.Path == "/admin/v1" {
					guarded.ServeHTTP(w, req)
					return
				}
				next.ServeHTTP(w, req)
			})
		}
		r.NotFoundHandler = adminFirst(r.NotFoundHandler)
		r.MethodNotAllowedHandler = adminFirst(r.MethodNotAllowedHandler)
	} else {
		// Without a token the admin API is off: its paths say so in the
		// API's error format rather than as an unknown route.
		disabled := s.h(func(http.ResponseWriter, *http.Request) error {
			return &httpError{status: http.StatusNotFound, name: nameAdminDisabled,
				message: "The admin API is disabled on this server until it has an admin token (herald serve: set HERALD_ADMIN_TOKEN)"}
		})
		r.PathPrefix("/admin/v1/").Handler(disabled)
		r.Path("/admin/v1").Handler(disabled)
	}

	paths := make([]string, 0, len(extra))
	for p := range extra {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	for _, p := range paths {
		h := s.guard(s.limits.max, extra[p])
		if strings.HasSuffix(p, "/") {
			r.PathPrefix(p).Handler(h)
		} else {
			r.Handle(p, h)
		}
	}

	if chatCallbacks != nil {
		// The providers' callbacks, with the body limits of Extra.
		h := s.guard(s.limits.max, chatCallbacks)
		r.Handle("/callbacks/chat", h)
		r.Handle("/callbacks/chat/{chatServiceId}", h)
	}

	r.HandleFunc("/healthz", s.healthz).Methods(http.MethodGet)
	r.HandleFunc("/readyz", s.readyz).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/openapi.json", s.openAPI).Methods(http.MethodGet)

	// Routes are registered flat, with full paths and their guard wrapped
	// around each handler: gorilla/mux subrouters lose the "method not
	// allowed" outcome of one route when a later route shares its prefix.
	// The body guard runs after authentication: a request refused there
	// takes nothing from the body budget.
	// Every POST runs once per Idempotency-Key.
	route := func(method, path string, f handlerFunc) {
		r.Handle("/api/v1"+path, s.apiKeyAuth(s.guard(s.limits.maxSmall, s.idempotent(s.h(f))))).Methods(method)
	}
	sending := func(method, path string, f handlerFunc) {
		r.Handle("/api/v1"+path, s.apiKeyAuth(s.guard(s.limits.max, s.idempotent(s.h(f))))).Methods(method)
	}

	route(http.MethodPost, "/templates/sms", s.createSMSTemplate)
	route(http.MethodPost, "/templates/chat", s.createChatTemplate)
	route(http.MethodPost, "/templates/preview", s.previewTemplate)
	route(http.MethodGet, "/templates", s.listTemplates)
	route(http.MethodGet, "/templates/{id}", s.getTemplate)
	route(http.MethodPut, "/templates/{id}", s.updateTemplate)
	route(http.MethodDelete, "/templates/{id}", s.deleteTemplate)

	route(http.MethodPost, "/sms/campaigns", s.createSMSCampaign)
	route(http.MethodPost, "/chat/campaigns", s.createChatCampaign)
	route(http.MethodPost, "/sms/campaigns/{id}/messages", s.addSMSMessage)
	route(http.MethodPost, "/chat/campaigns/{id}/messages", s.addChatMessage)
	sending(http.MethodPost, "/sms/promotional", s.sendSMSBulk)
	sending(http.MethodPost, "/chat/send", s.sendChatBulk)
	sending(http.MethodPost, "/sms/send", s.sendDirectSMS)
	sending(http.MethodPost, "/chat/send-text", s.sendDirectChat)

	route(http.MethodGet, "/campaigns", s.listCampaigns)
	route(http.MethodGet, "/campaigns/{id}", s.getCampaign)
	route(http.MethodGet, "/campaigns/{id}/messages.csv", s.exportMessages)
	route(http.MethodPost, "/campaigns/{id}/start", s.startCampaign)
	route(http.MethodPost, "/campaigns/{id}/pause", s.campaignMove(s.campaigns.Pause))
	route(http.MethodPost, "/campaigns/{id}/resume", s.campaignMove(s.campaigns.Resume))
	route(http.MethodPost, "/campaigns/{id}/cancel", s.campaignMove(s.campaigns.Cancel))

	route(http.MethodGet, "/messages", s.listMessages)
	route(http.MethodGet, "/summary", s.getSummary)
	route(http.MethodGet, "/messages/{id}", s.getMessage)
	route(http.MethodGet, "/survey-results", s.listSurveyResults)
	route(http.MethodGet, "/survey-results/{campaignId}/summary", s.surveySummary)
	route(http.MethodGet, "/chat-services", s.listChatServices)
	route(http.MethodGet, "/sms-senders", s.listSMSSenders)

	if s.inbound != nil {
		route(http.MethodGet, "/inbound", s.listInbound)
	}
	if s.optOuts != nil {
		route(http.MethodGet, "/opt-outs/keywords", s.getKeywords)
		route(http.MethodPut, "/opt-outs/keywords", s.setKeywords)
		route(http.MethodGet, "/opt-outs", s.listOptOuts)
		route(http.MethodPost, "/opt-outs", s.addOptOut)
		route(http.MethodDelete, "/opt-outs/{phoneNumber}", s.removeOptOut)
	}
	if s.webhooks != nil {
		route(http.MethodPost, "/webhooks", s.createWebhook)
		route(http.MethodGet, "/webhooks", s.listWebhooks)
		route(http.MethodGet, "/webhooks/{id}", s.getWebhook)
		route(http.MethodDelete, "/webhooks/{id}", s.deleteWebhook)
		route(http.MethodPost, "/webhooks/{id}/rotate-secret", s.rotateWebhookSecret)
		route(http.MethodGet, "/webhooks/{id}/deliveries", s.listDeliveries)
		route(http.MethodPost, "/webhooks/{id}/deliveries/{eventId}/redeliver", s.redeliver)
	}

	if s.adminToken != "" {
		post := func(path string, f handlerFunc) {
			r.Handle("/admin/v1"+path, s.adminAuth(s.guard(s.limits.maxSmall, s.h(f)))).Methods(http.MethodPost)
		}
		post("/companies", s.adminCreateCompany)
		post("/companies/{id}/activate", s.adminActivate(true))
		post("/companies/{id}/deactivate", s.adminActivate(false))
		post("/companies/{id}/api-keys", s.adminAPIKey)
		adminGet := func(path string, f handlerFunc) {
			r.Handle("/admin/v1"+path, s.adminAuth(s.guard(s.limits.maxSmall, s.h(f)))).Methods(http.MethodGet)
		}
		adminGet("/whoami", s.adminWhoAmI)
		adminGet("/companies", s.adminListCompanies)
		adminGet("/summary", s.adminSummary)
		adminGet("/companies/{id}/api-keys", s.adminListAPIKeys)
		adminGet("/companies/{id}/sms-senders", s.adminListSenders)
		adminGet("/companies/{id}/chat-services", s.adminListChatServices)
		r.Handle("/admin/v1/companies/{id}/api-keys/{keyId}", s.adminAuth(s.guard(s.limits.maxSmall, s.h(s.adminRevokeAPIKey)))).Methods(http.MethodDelete)
		post("/companies/{id}/sms-senders", s.adminRegisterSender)
		post("/companies/{id}/sms-senders/{smsSenderId}/approve", s.adminApproveCompanySender)
		post("/sms-senders/{smsSenderId}/approve", s.adminApproveSender)
		post("/companies/{id}/chat-services", s.adminAddChatService)
		adminGet("/companies/{id}/chat-services/{chatServiceId}", s.adminGetChatService)
		r.Handle("/admin/v1/companies/{id}/chat-services/{chatServiceId}", s.adminAuth(s.guard(s.limits.maxSmall, s.h(s.adminUpdateChatService)))).Methods(http.MethodPut)
		r.Handle("/admin/v1/companies/{id}", s.adminAuth(s.guard(s.limits.maxSmall, s.h(s.adminGetCompany)))).Methods(http.MethodGet)
		r.Handle("/admin/v1/companies/{id}/rate-limit", s.adminAuth(s.guard(s.limits.maxSmall, s.h(s.adminSetCompanyRate)))).Methods(http.MethodPut)
		if s.routing != nil {
			admin := func(method, path string, f handlerFunc) {
				r.Handle("/admin/v1"+path, s.adminAuth(s.guard(s.limits.maxSmall, s.h(f)))).Methods(method)
			}
			admin(http.MethodPost, "/smpp-connectors", s.adminCreateConnector)
			admin(http.MethodGet, "/smpp-connectors", s.adminListConnectors)
			admin(http.MethodGet, "/smpp-connectors/{name}", s.adminGetConnector)
			admin(http.MethodPut, "/smpp-connectors/{name}", s.adminUpdateConnector)
			admin(http.MethodDelete, "/smpp-connectors/{name}", s.adminDeleteConnector)
			admin(http.MethodPost, "/routes", s.adminCreateRoute)
			admin(http.MethodGet, "/routes", s.adminListRoutes)
			admin(http.MethodPut, "/routes/{id}", s.adminUpdateRoute)
			admin(http.MethodDelete, "/routes/{id}", s.adminDeleteRoute)
		}
	}
	return r
}

// methodNotAllowed answers a known path asked with the wrong method, with
// the methods it takes in Allow.
func (s *server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		var match mux.RouteMatch
		if s.router.Match(probe, &match) && match.MatchErr == nil {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
	}
	s.writeError(w, r, &httpError{status: http.StatusMethodNotAllowed, name: nameMethodNotAllowed,
		message: "Method " + r.Method + " is not allowed on " + r.URL.Path})
}

// healthz answers that the process is up.
func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// checkJSON is one check of the /readyz answer.
type checkJSON struct {
	Name     string `json:"name"`
	Status   string `json:"status"` // ok or error
	Required bool   `json:"required"`
	Error    string `json:"error,omitempty"`
}

// readyJSON is the /readyz answer. Error and Message are set on a 503, so
// that it also reads as the error format.
type readyJSON struct {
	Status  string      `json:"status"` // ok, degraded or unavailable
	Checks  []checkJSON `json:"checks"`
	Error   string      `json:"error,omitempty"`
	Message string      `json:"message,omitempty"`
}

// checkError is what the answer tells of a failed check: the text of a
// *messaging.Error, which is meant for callers, else only that it timed
// out or failed; the error itself is logged.
func checkError(ctx context.Context, err error) string {
	var e *messaging.Error
	switch {
	case errors.As(err, &e) && e.Message != "":
		return e.Message
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return "timed out"
	}
	return "failed"
}

// readyz answers whether the service can serve: every check, run at once,
// each within readyTimeout; 503 with Retry-After when a required one
// fails.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	out := readyJSON{Status: "ok", Checks: make([]checkJSON, len(s.checks))}
	var wg sync.WaitGroup
	for i, c := range s.checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			res := checkJSON{Name: c.Name, Status: "ok", Required: !c.Optional}
			if err := c.Check(ctx); err != nil {
				res.Status, res.Error = "error", checkError(ctx, err)
				s.log.LogAttrs(r.Context(), slog.LevelWarn, "readiness check failed",
					slog.String("requestId", requestID(r.Context())), slog.String("check", c.Name),
					slog.Bool("required", !c.Optional), slog.String("err", err.Error()))
			}
			out.Checks[i] = res
		})
	}
	wg.Wait()
	var failed []string
	for _, c := range out.Checks {
		switch {
		case c.Status == "ok":
		case c.Required:
			failed = append(failed, c.Name)
		default:
			out.Status = "degraded"
		}
	}
	if len(failed) == 0 {
		s.writeJSON(w, http.StatusOK, out)
		return
	}
	out.Status, out.Error = "unavailable", messaging.NameServiceUnavailable
	out.Message = "Not ready: " + strings.Join(failed, ", ") + " failed"
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(readyRetryAfter)))
	s.writeJSON(w, http.StatusServiceUnavailable, out)
}
