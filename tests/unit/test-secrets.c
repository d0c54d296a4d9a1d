/* secrets.c: sealing under secret.key, made on first use with mode 0600. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "secrets.h"

static char dir[] = "/tmp/td-secrets-XXXXXX";
static char key[64];

static void
setup(void)
{
	cr_assert_geq(sodium_init(), 0);
	strcpy(dir, "/tmp/td-secrets-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(key, sizeof key, "%s/secret.key", dir);
}

static void
teardown(void)
{
	unlink(key);
	rmdir(dir);
}

TestSuite(secrets, .init = setup, .fini = teardown);

Test(secrets, key_is_made_on_first_use_with_mode_0600)
{
	struct secrets *s = secrets_new(key);
	unsigned char *sealed;
	size_t len;
	struct stat st;

	cr_assert_neq(stat(key, &st), 0, "the key was made before it was needed");
	cr_assert(secrets_seal(s, "x", 1, &sealed, &len));
	cr_assert_eq(stat(key, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(st.st_size, crypto_secretbox_KEYBYTES);
	free(sealed);
	secrets_free(s);
}

Test(secrets, seal_open_round_trip_with_a_fresh_nonce_each_time)
{
	struct secrets *s = secrets_new(key), *again;
	const char *plain = "ghp_0123456789abcdef";
	unsigned char *a, *b;
	size_t alen, blen, olen;
	char *out;

	cr_assert(secrets_seal(s, plain, strlen(plain), &a, &alen));
	cr_assert(secrets_seal(s, plain, strlen(plain), &b, &blen));
	cr_assert_eq(alen, strlen(plain) + crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES);
	cr_assert_neq(memcmp(a, b, alen), 0, "two seals of one value are equal");
	cr_assert_null(memmem(a, alen, plain, strlen(plain)), "the plain text is in the seal");
	/* A new instance reads the key from the file. */
	again = secrets_new(key);
	cr_assert(secrets_open(again, a, alen, &out, &olen));
	cr_assert_eq(olen, strlen(plain));
	cr_assert_str_eq(out, plain);
	secrets_plain_free(out);
	a[alen - 1] ^= 1;
	cr_assert(!secrets_open(again, a, alen, &out, &olen), "a tampered seal opened");
	cr_assert(!secrets_open(again, b, 10, &out, &olen), "a short seal opened");
	free(a);
	free(b);
	secrets_free(s);
	secrets_free(again);
}

Test(secrets, a_key_others_can_read_is_refused)
{
	struct secrets *s = secrets_new(key);
	unsigned char *sealed = NULL;
	size_t len;
	int fd = open(key, O_WRONLY | O_CREAT, 0644);
	unsigned char k[crypto_secretbox_KEYBYTES] = { 1 };

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, k, sizeof k), (ssize_t)sizeof k);
	fchmod(fd, 0644);
	close(fd);
	cr_assert(!secrets_seal(s, "x", 1, &sealed, &len), "a 0644 key was used");
	cr_assert_null(sealed);
	secrets_free(s);
	chmod(key, 0600);
	s = secrets_new(key);
	cr_assert(secrets_seal(s, "x", 1, &sealed, &len));
	free(sealed);
	secrets_free(s);
	/* The wrong length is refused too. */
	truncate(key, 16);
	s = secrets_new(key);
	cr_assert(!secrets_seal(s, "x", 1, &sealed, &len));
	secrets_free(s);
}
