/* A server's form (an elicitation prompt's requestedSchema): its fields, for people. */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "client-internal.h"
#include "json.h"
#include "xalloc.h"

/* item as a field's value text: a string as it is, anything else as JSON. */
static char *
forms_value_text(const cJSON *item)
{
	return cJSON_IsString(item) ? xstrdup(item->valuestring) : json_print(item);
}

/* obj[key] into *value when it is a number. */
static bool
forms_number(const cJSON *obj, const char *key, double *value)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(v))
		return false;
	*value = v->valuedouble;
	return true;
}

/* The choices of prop ("enum" with "enumNames", or "oneOf" of const and title): how many, or -1 over the cap. */
static long
forms_choices(const cJSON *prop, struct td_form_field *f)
{
	const cJSON *en = cJSON_GetObjectItemCaseSensitive(prop, "enum");
	const cJSON *names = cJSON_GetObjectItemCaseSensitive(prop, "enumNames");
	const cJSON *one_of = cJSON_GetObjectItemCaseSensitive(prop, "oneOf");
	const cJSON *list = cJSON_IsArray(en) ? en : cJSON_IsArray(one_of) ? one_of : NULL;
	const cJSON *c;
	int n = cJSON_GetArraySize(list);

	if (n == 0)
		return 0;
	if (n > TD_FORM_MAX_CHOICES)
		return -1;
	f->choices = xcalloc((size_t)n, sizeof *f->choices);
	cJSON_ArrayForEach(c, list) {
		struct td_form_choice *ch = &f->choices[f->choice_count];

		if (list == en) {
			const cJSON *name = cJSON_GetArrayItem(names, (int)f->choice_count);

			ch->value = forms_value_text(c);
			ch->title = cJSON_IsString(name) ? xstrdup(name->valuestring) : NULL;
		} else if (cJSON_HasObjectItem(c, "const")) {
			ch->value = forms_value_text(cJSON_GetObjectItemCaseSensitive(c, "const"));
			ch->title = xstrdup_or_null(json_get_string(c, "title"));
		} else {
			continue;
		}
		f->choice_count++;
	}
	return (long)f->choice_count;
}

/* Reads the field prop of the form whose required list is req; false over a cap. */
static bool
forms_field(const cJSON *prop, const cJSON *req, struct td_form_field *f)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(prop, "type");
	const cJSON *def = cJSON_GetObjectItemCaseSensitive(prop, "default"), *r;
	static const struct {
		const char *type;
		enum td_form_kind kind;
	} kinds[] = {
		{ "string", TD_FORM_STRING },
		{ "number", TD_FORM_NUMBER },
		{ "integer", TD_FORM_INTEGER },
		{ "boolean", TD_FORM_BOOLEAN },
	};
	long choices;

	f->name = xstrdup(prop->string);
	f->type = type == NULL ? xstrdup("string") : forms_value_text(type);
	f->kind = TD_FORM_OTHER;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (cJSON_IsString(type) ? strcmp(f->type, kinds[i].type) == 0 :
		    type == NULL && kinds[i].kind == TD_FORM_STRING)
			f->kind = kinds[i].kind;
	}
	f->title = xstrdup_or_null(json_get_string(prop, "title"));
	f->description = xstrdup_or_null(json_get_string(prop, "description"));
	f->default_json = def != NULL ? json_print(def) : NULL;
	cJSON_ArrayForEach(r, req)
		f->required = f->required || (cJSON_IsString(r) && strcmp(r->valuestring, f->name) == 0);
	if ((choices = forms_choices(prop, f)) < 0)
		return false;
	if (choices > 0)
		f->kind = TD_FORM_CHOICE;
	if (f->kind == TD_FORM_STRING) {
		f->format = xstrdup_or_null(json_get_string(prop, "format"));
		f->has_minimum = forms_number(prop, "minLength", &f->minimum);
		f->has_maximum = forms_number(prop, "maxLength", &f->maximum);
	} else if (f->kind == TD_FORM_NUMBER || f->kind == TD_FORM_INTEGER) {
		f->has_minimum = forms_number(prop, "minimum", &f->minimum);
		f->has_maximum = forms_number(prop, "maximum", &f->maximum);
	}
	return true;
}

enum td_code
td_form_parse(const char *input_json, struct td_form **out, struct td_error *err)
{
	size_t len = input_json != NULL ? strnlen(input_json, TD_FORM_MAX_BYTES + 1) : 0;
	cJSON *in;
	const cJSON *schema, *props, *req, *p;
	struct td_form *form;
	int n;

	*out = NULL;
	if (len > TD_FORM_MAX_BYTES)
		return client_fail(err, TD_INVALID_ARGUMENT, "the prompt's input is over %d bytes",
		    TD_FORM_MAX_BYTES);
	in = len > 0 ? json_parse(input_json, len) : NULL;
	schema = cJSON_GetObjectItemCaseSensitive(in, "requestedSchema");
	props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
	req = cJSON_GetObjectItemCaseSensitive(schema, "required");
	if (!cJSON_IsObject(props) || (n = cJSON_GetArraySize(props)) == 0) {
		cJSON_Delete(in);
		return client_fail(err, TD_INVALID_ARGUMENT, "the prompt's input holds no form");
	}
	if (n > TD_FORM_MAX_FIELDS) {
		cJSON_Delete(in);
		return client_fail(err, TD_INVALID_ARGUMENT, "the form has over %d fields",
		    TD_FORM_MAX_FIELDS);
	}
	form = xcalloc(1, sizeof *form);
	form->message = xstrdup_or_null(json_get_string(in, "message"));
	form->fields = xcalloc((size_t)n, sizeof *form->fields);
	cJSON_ArrayForEach(p, props) {
		if (!cJSON_IsObject(p) || p->string == NULL)
			continue;
		if (!forms_field(p, req, &form->fields[form->field_count++])) {
			td_form_free(form);
			cJSON_Delete(in);
			return client_fail(err, TD_INVALID_ARGUMENT,
			    "a field of the form has over %d choices", TD_FORM_MAX_CHOICES);
		}
	}
	cJSON_Delete(in);
	if (form->field_count == 0) {
		td_form_free(form);
		return client_fail(err, TD_INVALID_ARGUMENT, "the prompt's form has no field");
	}
	*out = form;
	return TD_OK;
}

void
td_form_free(struct td_form *form)
{
	if (form == NULL)
		return;
	for (size_t i = 0; i < form->field_count; i++) {
		struct td_form_field *f = &form->fields[i];

		free(f->name);
		free(f->type);
		free(f->title);
		free(f->description);
		free(f->format);
		free(f->default_json);
		for (size_t j = 0; j < f->choice_count; j++) {
			free(f->choices[j].value);
			free(f->choices[j].title);
		}
		free(f->choices);
	}
	free(form->fields);
	free(form->message);
	free(form);
}

/* Appends the server's text s with its control characters as spaces. */
static void
forms_put(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		char c = (unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s;

		buf_append(b, &c, 1);
	}
}

/* The choices' values as a JSON array: ["red","green"]. */
static char *
forms_choices_json(const struct td_form_field *f)
{
	cJSON *arr = cJSON_CreateArray();
	char *text;

	for (size_t i = 0; i < f->choice_count; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(f->choices[i].value));
	text = json_print(arr);
	cJSON_Delete(arr);
	return text;
}

char *
td_form_text(const struct td_form *form, enum td_form_style style, const char *indent)
{
	struct buf b;

	buf_init(&b, 0);
	for (size_t i = 0; form != NULL && i < form->field_count; i++) {
		const struct td_form_field *f = &form->fields[i];

		if (style == TD_FORM_ONE_LINE) {
			buf_appends(&b, i > 0 ? ", " : "");
			forms_put(&b, f->name);
			buf_appends(&b, " ");
			forms_put(&b, f->type);
			buf_appends(&b, f->default_json != NULL ? "=" : f->required ? "!" : "");
			forms_put(&b, f->default_json != NULL ? f->default_json : "");
			continue;
		}
		buf_appends(&b, i > 0 ? "\n" : "");
		buf_appends(&b, indent != NULL ? indent : "");
		forms_put(&b, f->name);
		buf_appends(&b, " (");
		forms_put(&b, f->type);
		buf_appends(&b, f->required ? ", required" : "");
		if (f->choice_count > 0) {
			char *choices = forms_choices_json(f);

			buf_appends(&b, ", one of ");
			forms_put(&b, choices);
			free(choices);
		}
		buf_appends(&b, "): ");
		forms_put(&b, f->description != NULL ? f->description : "-");
		if (f->default_json != NULL) {
			buf_appends(&b, " [default: ");
			forms_put(&b, f->default_json);
			buf_appends(&b, "]");
		}
	}
	return buf_steal(&b);
}
