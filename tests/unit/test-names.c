/* The names from outside that the CLI, the agent and the service check alike. */
#include <string.h>

#include <criterion/criterion.h>

#include "names.h"

Test(names, env_names_of_the_portable_set)
{
	char longest[NAMES_ENV_MAX + 2];

	cr_assert(names_env_valid("OPENAI_API_KEY"));
	cr_assert(names_env_valid("_x1"));
	cr_assert(names_env_valid("a"));
	memset(longest, 'K', NAMES_ENV_MAX);
	longest[NAMES_ENV_MAX] = '\0';
	cr_assert(names_env_valid(longest));
	longest[NAMES_ENV_MAX] = 'K';
	longest[NAMES_ENV_MAX + 1] = '\0';
	cr_assert_not(names_env_valid(longest), "one byte over the limit");
	cr_assert_not(names_env_valid(NULL));
	cr_assert_not(names_env_valid(""));
	cr_assert_not(names_env_valid("1KEY"), "a digit first");
	cr_assert_not(names_env_valid("sk-123=abc"), "a key given where its name goes");
	cr_assert_not(names_env_valid("A B"));
	cr_assert_not(names_env_valid("KEY\n"));
	cr_assert_not(names_env_valid("K\xc3\x89Y"), "beyond ASCII");
}
