// Package template holds the rules of Herald's message templates: their
// validation (SMS templates and the eight chat message types), the
// {{placeholder}} syntax and its rendering, the media checks done when a
// template is created, and how an SMS text is encoded and split into
// segments. It is pure: the one I/O it needs, probing media URLs, goes
// through the MediaProber port (transport/media implements it over HTTP).
//
// # Validation
//
// Validate and Check apply every rule of the API's template resource and
// its limits; errors come back field by field, keyed by JSON path
// ("typeSpecificConfig.items[0].title"). Lengths count Unicode code points;
// a required text that is empty or white space only is missing. Choices
// where the API leaves room:
//
//   - templateContent is required for SimpleText, ButtonPlusText,
//     ImagePlusText and Survey (the question), optional for ImageOnly,
//     Carousel, Video and File; it has at most 1000 characters on every
//     chat type but Survey (85), 1600 on SMS templates.
//   - Template names have at most 200 characters; their uniqueness is the
//     store's rule. Existence and ownership of chatServiceId, smsSenderId
//     and smsFallbackSenderId are the caller's checks.
//   - buttonText of ImagePlusText and of Video has the ButtonPlusText
//     limits (1-30). A Video button is optional, but its text and URL come
//     together; so do a carousel item's secondary text and URL.
//   - Survey optionValue is required (answers report it) and has at most
//     100 characters; fileName at most 255. URLs have at most 2048 bytes,
//     no white space, no credentials, and must be https:// with a valid
//     host.
//   - Placeholders are accepted in templateContent, buttonUrl of
//     ButtonPlusText and ImagePlusText, fileUrl and
//     smsFallbackTemplateContent. A placeholder in any other URL (imageUrl,
//     carousel URLs, videoUrl, thumbnailUrl, a Video's buttonUrl) is a
//     validation error, since it would never be filled; in fileName it is
//     plain text. A URL with placeholders is checked with the placeholders
//     left in, so its scheme and host are fixed by the template.
//   - Fields that do not belong to the message type are ignored, except
//     for the character rule below: they are kept as given.
//
// # Characters
//
// CheckChars is the one rule on the characters of every text Herald
// stores, applied here to every field of a template and by the campaign
// package to everything else a request carries (campaign names, message
// texts, external user ids, placeholder names and values, company and
// chat service names): the text must be valid UTF-8 and hold no control
// character U+0000-U+001F but tab, line feed and carriage return. A NUL
// cannot be stored in a Postgres text column, and the other controls
// have no business in a message; refusing them at the edge of the domain
// makes them a 400 on the field at fault on every store, instead of a
// failure of the database (or, worse, a stored text that one store keeps
// and another could not). Form feed is refused too, although GSM 03.38
// can encode it. DEL and the C1 controls (U+007F-U+009F) are let through:
// every store keeps them.
//   - fileType is matched without regard to case and stored as given.
//
// # Media
//
// ValidateMedia probes image, video, thumbnail and file URLs concurrently
// through a MediaProber and reports unreachable, non-2xx, non-HTTPS and
// oversized media (when the size is known). It fills a video's fileSize
// from Content-Length; duration cannot be learned from a HEAD request, so
// the caller's value is kept. Content-Type is not enforced: many hosts
// serve media as application/octet-stream.
//
// # Placeholders
//
// A placeholder is {{name}} with a name of [A-Za-z0-9_]+, case-sensitive.
// Anything else ("{{ name }}", "{{first-name}}") is plain text. Rendering
// looks a name up in the recipient's values first and falls back to the
// request's values name by name; a name found in neither stays as written.
// Compile a text once and render it for every recipient: a text without
// placeholders renders without allocating, one with placeholders with a
// single allocation. Values rendered into a URL have the characters that
// cannot appear in a URL percent-encoded. Direct sends take no
// placeholders: their text is sent as written; HasPlaceholders lets a
// caller detect them.
//
// # Rendered lengths
//
// A template's limits bind what is sent, not only what is written: a
// placeholder value can make a message of any length ("{{x}}" 320 times
// with a value of 100 characters is 32,000 characters, 1 MB values make
// a 320 MB message). Compiled therefore knows the limit of each rendered
// field, as Validate has it (SMS content and SMS fallback 1,600
// characters, chat content 1,000 or 85 for a Survey question, buttonUrl
// and fileUrl 2,048 bytes once values are percent-encoded), and refuses
// with a *TooLongError a message that would exceed one, before rendering
// anything: a rendering can never be longer than its limit.
//
// The length is computed, not rendered: the literal text's length plus,
// for each placeholder name, its number of occurrences times the length
// of its value, each value measured once (Text.Len and Text.URLLen say
// the same of one text). Bind measures the request-level values of a send
// once; checking a recipient (Bound.Fits) then costs about the smaller
// of its number of values and the template's number of names (a map
// lookup each), and each value is read no further than one character
// past the largest limit it could fill, so a hostile value costs no more
// than a long legitimate one.
// Lengths beyond a limit are lower bounds, which is all a refusal needs;
// up to the limit they are exact (for valid UTF-8, which every stored
// text is; invalid bytes count one each, never less than the rendering).
//
// # SMS encoding
//
// A text is GSM-7 when every character is in the GSM 03.38 basic table or
// its extension table (form feed and ^ { } \ [ ] ~ | €, two septets each),
// else UCS-2 (UTF-16, so characters beyond U+FFFF count two units). One
// SMS carries 160 septets or 70 units; a longer text is split into parts
// of 153 septets or 67 units, never inside an escape or surrogate pair.
package template
