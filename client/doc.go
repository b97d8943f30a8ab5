// Package client is a typed Go client of Herald's company API (/api/v1):
// templates, campaigns and sends (bulk, transactional and direct, SMS and
// chat), messages and their CSV export, survey results, SMS senders and
// chat services, inbound SMS, opt-outs and webhooks. Package
// client/admin is its counterpart for the operators' API (/admin/v1).
//
// It uses the standard library only, and mirrors the API one method a
// route; docs/api.md and the OpenAPI document (GET /api/v1/openapi.json)
// tell what each route does.
//
//	c, err := client.New("http://127.0.0.1:8080", apiKey)
//	if err != nil { ... }
//	res, err := c.SendSMS(ctx, client.DirectSMS{
//		MessageContent: "Your code is 4711",
//		SMSSenderID:    1,
//		Recipients:     []client.DirectRecipient{{PhoneNumber: "+447700900123"}},
//	})
//	if client.IsRateLimited(err) { ... } // still so after the retries
//	for m, err := range c.AllMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID}) {
//		if err != nil { ... }
//		fmt.Println(m.PhoneNumber, m.Status)
//	}
//
// # Conventions
//
// Every method takes a context first. Ids of templates, campaigns,
// messages and webhooks are UUID strings; those of SMS senders and chat
// services are integers. Times are time.Time, and a time the API answers
// as null is the zero time; a string it answers as null is empty.
// Validity periods are in seconds, as in the API.
//
// # Errors
//
// An answer that is not a success is returned as a *Error holding its
// status, the API's error name, message and validation errors (field path
// to message), and the wait it asked for (RetryAfter); IsNotFound,
// IsBadRequest, IsRateLimited and the other helpers test for the usual
// cases. Transport errors are returned wrapped with the request's method
// and path.
//
// # Retries and idempotency
//
// A 429 (the company's pending capacity is used up) is sent again, up to
// DefaultRetries times, after the wait the answer asks for, unless that
// wait would pass the context's deadline or DefaultMaxRetryWait:
// WithRetries and WithMaxRetryWait change that, WithRetries(0) turns it
// off. Nothing else is retried.
//
// A send whose answer was lost (a timeout, a dropped connection) is made
// safe to send again with an Idempotency-Key, given through the context:
// WithIdempotencyKey(ctx, key). Every POST made with that context carries
// the key; the server answers the first answer again to a repeat.
//
// # Pagination
//
// Each list has a method for one page (ListMessages, ...) returning a
// Page, and an iterator (AllMessages, ...) that walks the pages until the
// list's total count is reached:
//
//	for t, err := range c.AllTemplates(ctx, client.PageOptions{PageSize: 100}) { ... }
package client
