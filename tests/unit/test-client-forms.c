/*
 * td_form_parse and td_form_text over the forms the MCP specification lets a
 * server ask for (elicitation's requestedSchema), and over hostile input.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskdeck.h"

/* The prompt input of a form whose properties are props (and required, when not NULL). */
static char *
form_input(const char *props, const char *required)
{
	char *s;

	cr_assert(asprintf(&s, "{\"message\":\"Who is asking?\",\"requestedSchema\":"
	    "{\"type\":\"object\",\"properties\":{%s}%s%s}}", props,
	    required != NULL ? ",\"required\":" : "", required != NULL ? required : "") > 0);
	return s;
}

static struct td_form *
parsed(const char *props, const char *required)
{
	char *in = form_input(props, required);
	struct td_form *form = NULL;
	struct td_error err;

	cr_assert_eq(td_form_parse(in, &form, &err), TD_OK, "%s: %s", in, err.message);
	free(in);
	return form;
}

/* td_form_parse's code for input, with err's message in why. */
static enum td_code
refused(const char *input, char *why, size_t len)
{
	struct td_form *form = (struct td_form *)1;
	struct td_error err = { 0 };
	enum td_code code = td_form_parse(input, &form, &err);

	cr_assert_null(form, "a refused form is still handed out");
	snprintf(why, len, "%s", err.message);
	return code;
}

static void
assert_text(const struct td_form *form, enum td_form_style style, const char *indent,
    const char *want)
{
	char *got = td_form_text(form, style, indent);

	cr_assert_str_eq(got, want);
	free(got);
}

Test(form, strings_with_format_and_length)
{
	struct td_form *f = parsed("\"email\":{\"type\":\"string\",\"title\":\"Email\","
	    "\"description\":\"Where to write\",\"format\":\"email\",\"minLength\":3,"
	    "\"maxLength\":64},\"note\":{\"type\":\"string\"}", "[\"email\"]");

	cr_assert_str_eq(f->message, "Who is asking?");
	cr_assert_eq(f->field_count, 2);
	cr_assert_str_eq(f->fields[0].name, "email");
	cr_assert_eq(f->fields[0].kind, TD_FORM_STRING);
	cr_assert_str_eq(f->fields[0].title, "Email");
	cr_assert_str_eq(f->fields[0].format, "email");
	cr_assert(f->fields[0].required);
	cr_assert(f->fields[0].has_minimum && f->fields[0].minimum == 3);
	cr_assert(f->fields[0].has_maximum && f->fields[0].maximum == 64);
	cr_assert_null(f->fields[1].format);
	cr_assert(!f->fields[1].has_minimum && !f->fields[1].has_maximum);
	cr_assert(!f->fields[1].required);
	assert_text(f, TD_FORM_LINES, NULL,
	    "email (string, required): Where to write\nnote (string): -");
	assert_text(f, TD_FORM_ONE_LINE, NULL, "email string!, note string");
	td_form_free(f);
}

Test(form, numbers_integers_and_booleans)
{
	struct td_form *f = parsed("\"ratio\":{\"type\":\"number\",\"minimum\":0.5},"
	    "\"age\":{\"type\":\"integer\",\"description\":\"Your age\",\"minimum\":0,"
	    "\"maximum\":150},\"subscribe\":{\"type\":\"boolean\",\"default\":false}",
	    "[\"age\"]");

	cr_assert_eq(f->fields[0].kind, TD_FORM_NUMBER);
	cr_assert(f->fields[0].has_minimum && f->fields[0].minimum == 0.5);
	cr_assert(!f->fields[0].has_maximum);
	cr_assert_eq(f->fields[1].kind, TD_FORM_INTEGER);
	cr_assert(f->fields[1].has_maximum && f->fields[1].maximum == 150);
	cr_assert_eq(f->fields[2].kind, TD_FORM_BOOLEAN);
	cr_assert_str_eq(f->fields[2].default_json, "false");
	assert_text(f, TD_FORM_ONE_LINE, NULL,
	    "ratio number, age integer!, subscribe boolean=false");
	assert_text(f, TD_FORM_LINES, "  ", "  ratio (number): -\n"
	    "  age (integer, required): Your age\n"
	    "  subscribe (boolean): - [default: false]");
	td_form_free(f);
}

Test(form, enum_with_names)
{
	struct td_form *f = parsed("\"color\":{\"type\":\"string\",\"enum\":[\"red\",\"green\","
	    "\"blue\"],\"enumNames\":[\"Red\",\"Green\"],\"default\":\"red\"}", NULL);
	const struct td_form_field *c = &f->fields[0];

	cr_assert_eq(c->kind, TD_FORM_CHOICE);
	cr_assert_str_eq(c->type, "string");
	cr_assert_eq(c->choice_count, 3);
	cr_assert_str_eq(c->choices[0].value, "red");
	cr_assert_str_eq(c->choices[0].title, "Red");
	cr_assert_str_eq(c->choices[1].title, "Green");
	cr_assert_str_eq(c->choices[2].value, "blue");
	cr_assert_null(c->choices[2].title, "enumNames has no third name");
	assert_text(f, TD_FORM_LINES, NULL,
	    "color (string, one of [\"red\",\"green\",\"blue\"]): - [default: \"red\"]");
	assert_text(f, TD_FORM_ONE_LINE, NULL, "color string=\"red\"");
	td_form_free(f);
}

Test(form, one_of_with_titles)
{
	struct td_form *f = parsed("\"size\":{\"type\":\"string\",\"oneOf\":["
	    "{\"const\":\"s\",\"title\":\"Small\"},{\"const\":\"l\",\"title\":\"Large\"},"
	    "{\"title\":\"no const: no choice\"},{\"const\":\"m\"}]}", "[\"size\"]");
	const struct td_form_field *s = &f->fields[0];

	cr_assert_eq(s->kind, TD_FORM_CHOICE);
	cr_assert_eq(s->choice_count, 3);
	cr_assert_str_eq(s->choices[0].value, "s");
	cr_assert_str_eq(s->choices[0].title, "Small");
	cr_assert_str_eq(s->choices[1].title, "Large");
	cr_assert_str_eq(s->choices[2].value, "m");
	cr_assert_null(s->choices[2].title);
	assert_text(f, TD_FORM_LINES, NULL, "size (string, required, one of [\"s\",\"l\",\"m\"]): -");
	td_form_free(f);
}

Test(form, defaults_of_every_kind)
{
	struct td_form *f = parsed("\"n\":{\"type\":\"string\",\"default\":\"anon\"},"
	    "\"k\":{\"type\":\"integer\",\"default\":3},\"x\":{\"type\":\"number\",\"default\":2.5},"
	    "\"b\":{\"type\":\"boolean\",\"default\":true}", "[\"n\",\"k\"]");

	cr_assert_str_eq(f->fields[0].default_json, "\"anon\"");
	cr_assert_str_eq(f->fields[1].default_json, "3");
	cr_assert_str_eq(f->fields[2].default_json, "2.5");
	cr_assert_str_eq(f->fields[3].default_json, "true");
	/* A required field with a default takes the default: no "!" */
	assert_text(f, TD_FORM_ONE_LINE, NULL,
	    "n string=\"anon\", k integer=3, x number=2.5, b boolean=true");
	assert_text(f, TD_FORM_LINES, NULL, "n (string, required): - [default: \"anon\"]\n"
	    "k (integer, required): - [default: 3]\nx (number): - [default: 2.5]\n"
	    "b (boolean): - [default: true]");
	td_form_free(f);
}

Test(form, unknown_and_missing_types)
{
	struct td_form *f = parsed("\"when\":{\"type\":\"object\"},\"tags\":{\"type\":[\"string\","
	    "\"null\"]},\"plain\":{\"description\":\"no type\"},\"notafield\":7,"
	    "\"alsonot\":\"x\"", "[7,\"plain\",\"nosuch\"]");

	cr_assert_eq(f->field_count, 3, "a property that is no object is no field");
	cr_assert_eq(f->fields[0].kind, TD_FORM_OTHER);
	cr_assert_str_eq(f->fields[0].type, "object");
	cr_assert_eq(f->fields[1].kind, TD_FORM_OTHER);
	cr_assert_str_eq(f->fields[1].type, "[\"string\",\"null\"]");
	cr_assert_eq(f->fields[2].kind, TD_FORM_STRING, "no type is a string");
	cr_assert(f->fields[2].required);
	assert_text(f, TD_FORM_ONE_LINE, NULL,
	    "when object, tags [\"string\",\"null\"], plain string!");
	td_form_free(f);
}

Test(form, no_form)
{
	char why[sizeof ((struct td_error *)0)->message];

	cr_assert_eq(refused(NULL, why, sizeof why), TD_INVALID_ARGUMENT);
	cr_assert_eq(refused("", why, sizeof why), TD_INVALID_ARGUMENT);
	cr_assert_eq(refused("{}", why, sizeof why), TD_INVALID_ARGUMENT);
	cr_assert_str_eq(why, "the prompt's input holds no form");
	cr_assert_eq(refused("{\"path\":\"report.md\"}", why, sizeof why), TD_INVALID_ARGUMENT);
	cr_assert_eq(refused("[1,2]", why, sizeof why), TD_INVALID_ARGUMENT);
	cr_assert_eq(refused("\"requestedSchema\"", why, sizeof why), TD_INVALID_ARGUMENT);
	cr_assert_eq(refused("{\"requestedSchema\":[]}", why, sizeof why), TD_INVALID_ARGUMENT);
	cr_assert_eq(refused("{\"requestedSchema\":{\"properties\":[{\"a\":1}]}}", why,
	    sizeof why), TD_INVALID_ARGUMENT);
	cr_assert_eq(refused("{\"requestedSchema\":{\"properties\":{}}}", why, sizeof why),
	    TD_INVALID_ARGUMENT);
	cr_assert_eq(refused("{\"requestedSchema\":{\"properties\":{\"a\":1,\"b\":null}}}",
	    why, sizeof why), TD_INVALID_ARGUMENT);
	cr_assert_str_eq(why, "the prompt's form has no field");
	cr_assert_eq(refused("{\"requestedSchema\":{\"properties\":{\"a\":{}}", why, sizeof why),
	    TD_INVALID_ARGUMENT, "cut short");
	/* NULL form renders as nothing. */
	assert_text(NULL, TD_FORM_LINES, "  ", "");
}

Test(form, hostile_sizes)
{
	char why[sizeof ((struct td_error *)0)->message], *props, *in, *p;
	size_t cap = 1 << 20;

	/* Over TD_FORM_MAX_BYTES, even when it would parse. */
	in = malloc(TD_FORM_MAX_BYTES + 64);
	p = in + sprintf(in, "{\"requestedSchema\":{\"properties\":{\"a\":{\"description\":\"");
	memset(p, 'x', TD_FORM_MAX_BYTES);
	strcpy(p + TD_FORM_MAX_BYTES, "\"}}}}");
	cr_assert_eq(refused(in, why, sizeof why), TD_INVALID_ARGUMENT);
	cr_assert(strstr(why, "bytes") != NULL, "%s", why);
	free(in);

	/* More fields than TD_FORM_MAX_FIELDS. */
	props = malloc(cap);
	p = props;
	for (int i = 0; i <= TD_FORM_MAX_FIELDS; i++)
		p += sprintf(p, "%s\"f%d\":{\"type\":\"string\"}", i ? "," : "", i);
	in = form_input(props, NULL);
	cr_assert_eq(refused(in, why, sizeof why), TD_INVALID_ARGUMENT);
	cr_assert(strstr(why, "fields") != NULL, "%s", why);
	free(in);

	/* A field of more choices than TD_FORM_MAX_CHOICES. */
	p = props + sprintf(props, "\"c\":{\"type\":\"string\",\"enum\":[");
	for (int i = 0; i <= TD_FORM_MAX_CHOICES; i++)
		p += sprintf(p, "%s\"v%d\"", i ? "," : "", i);
	strcpy(p, "]}");
	in = form_input(props, NULL);
	cr_assert_eq(refused(in, why, sizeof why), TD_INVALID_ARGUMENT);
	cr_assert(strstr(why, "choices") != NULL, "%s", why);
	free(in);
	free(props);
}

Test(form, hostile_nesting)
{
	char why[sizeof ((struct td_error *)0)->message], *in = malloc(64 + 6 * 10000), *p;

	/* A default nested 10,000 deep: no stack overflow, no form. */
	p = in + sprintf(in, "{\"requestedSchema\":{\"properties\":{\"a\":{\"default\":");
	for (int i = 0; i < 10000; i++)
		*p++ = '[';
	for (int i = 0; i < 10000; i++)
		*p++ = ']';
	strcpy(p, "}}}}");
	cr_assert_eq(refused(in, why, sizeof why), TD_INVALID_ARGUMENT);
	free(in);
}

Test(form, hostile_text)
{
	struct td_form *f = parsed("\"a\\u001b[2Jb\":{\"type\":\"str\\ring\",\"description\":"
	    "\"line\\nbreak\\u0007 and \\u007f\",\"default\":\"x\\ny\"}", NULL);
	char *text = td_form_text(f, TD_FORM_LINES, NULL);

	cr_assert_str_eq(f->fields[0].name, "a\033[2Jb", "the field keeps its name");
	cr_assert_str_eq(text, "a [2Jb (str ing): line break  and   [default: \"x\\ny\"]");
	free(text);
	text = td_form_text(f, TD_FORM_ONE_LINE, NULL);
	cr_assert_null(strpbrk(text, "\033\n\r\a"), "%s", text);
	free(text);
	td_form_free(f);
}
