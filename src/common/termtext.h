/*
 * Text that others name (a model, a server, a file), made safe to show on a
 * terminal: the one rule the CLI and the dashboard share.
 */
#ifndef TD_COMMON_TERMTEXT_H
#define TD_COMMON_TERMTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/*
 * The bytes of the character at s[0..len) when it must not reach a terminal as
 * it is: a C0 control (tab and newline included), DEL, a C1 control, a
 * bidirectional control (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069:
 * "\u202egnp.exe" shows as "exe.png"), or a byte that begins no valid UTF-8
 * character (1).  0 when the character is safe, or len is 0.
 */
size_t termtext_unsafe(const char *s, size_t len);

/* How termtext_append shows a newline and a tab (each unsafe otherwise). */
struct termtext_style {
	const char *newline;	/* NULL: '?' */
	const char *tab;	/* NULL: '?' */
};

/* Appends s with every unsafe character as '?', newlines and tabs as style says. */
void termtext_append(struct buf *b, const char *s, const struct termtext_style *style);

/* A copy of s on one line (a newline or a tab is a space); NULL gives "-"; free() it. */
char *termtext_line(const char *s);

/* True when s holds no unsafe character at all. */
bool termtext_safe(const char *s);

#endif
