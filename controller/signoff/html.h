/* The HTML view of a sign-off report (docs/signoff.md): one self-contained page (inline style and
 * SVG; no script, no font, no external reference) rendered from the signed JSON bytes alone, so
 * it never shows what the signature does not cover. Pure: no clock, no I/O, no global state. */
#ifndef RAILYARD_SIGNOFF_HTML_H
#define RAILYARD_SIGNOFF_HTML_H

#include <stddef.h>

#include "controller/signoff/canon.h" /* SO_SCHEMA: the schema this renderer knows */

/* The Content-Security-Policy the page is served with (GET /api/v1/signoffs/{id}/signoff.html,
 * from the API's origin): its inline <style> and nothing else — no script, no image, font or
 * connection, no <base>, no form, no framing, and sandboxed (an opaque origin: were a script
 * ever to run, it could not reach the API's). The page's own <meta> policy says the part of
 * this that a <meta> can (for a copy opened from disk). SVG's url(#id) references stay within
 * the document and need no source. */
#define SO_HTML_CSP                                                                                \
	"default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "     \
	"frame-ancestors 'none'; sandbox"

/* Render the report json[0..len) (borrowed; the exact bytes that were signed, NUL not needed)
 * as one HTML5 page. Every string from the report is HTML-escaped. Besides "schema", the report
 * must hold the members "id", "kind", "cluster", "created_at" and "verdict"; any other member
 * may be absent or of the wrong type: its place on the page then shows "?". The page grows
 * with the report but not with its square: at most 64 heatmaps, and above 32 hosts a heatmap
 * is one strip of per-host medians (a 1024-node report gives a page of a few hundred KB). A
 * test that "results_summary" summarises per host and rail is drawn from that summary: per rail
 * a strip of per-host means, and for latency a histogram of those means of p50_us.
 * On success returns 0 and *ret_html is the NUL-terminated page of *ret_len bytes (caller frees
 * with free()); on failure nothing is written to them.
 * Errors: -RY_E_INVALID when the bytes are not JSON (errbuf "not JSON: LINE:COLUMN: ..."; a
 * duplicate key counts, since which of its values a reader takes is ambiguous), not an object,
 * lack a required member (errbuf "missing member: NAME") or are of another schema (errbuf names
 * "schema" and the value found); -ENOMEM. errbuf (errlen bytes; may be NULL when errlen is 0)
 * gets a reason on every failure. Thread-safe. */
__attribute__((warn_unused_result)) int so_html_render(const char *json, size_t len,
						       char **ret_html, size_t *ret_len,
						       char *errbuf, size_t errlen);

#endif
