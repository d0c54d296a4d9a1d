/*
 * Secrets at rest (DESIGN section 12): crypto_secretbox under one key kept
 * in secret.key (0600, made on first use).  A sealed value is the 24-byte
 * nonce, fresh for every seal, followed by the MAC and the ciphertext.
 */
#ifndef TD_SERVICE_SECRETS_H
#define TD_SERVICE_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

struct secrets;

/* Nothing is read or made until the key is first needed. */
struct secrets *secrets_new(const char *key_path);
/* Wipes the key.  NULL ok. */
void secrets_free(struct secrets *s);
/*
 * Seals len bytes of plain into *sealed (malloc'd, *sealed_len bytes).
 * false when the key cannot be read or made (logged, without the key).
 */
bool secrets_seal(struct secrets *s, const char *plain, size_t len,
    unsigned char **sealed, size_t *sealed_len);
/*
 * Opens a sealed value into *plain (sodium_malloc'd, NUL-terminated, free
 * with secrets_plain_free); false when it does not authenticate.
 */
bool secrets_open(struct secrets *s, const unsigned char *sealed, size_t sealed_len,
    char **plain, size_t *plain_len);
/* The errno of the last failure to make the key (ENOSPC on a full disk), or 0. */
int secrets_make_errno(struct secrets *s);
/* Wipes and frees a value from secrets_open.  NULL ok. */
void secrets_plain_free(char *plain);

#endif
